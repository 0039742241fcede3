package org.jvmos.workloads.matmul;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A node's incoming messages, put by the mechanism's receiving side (an RMI thread, a socket
 * reader thread, the datagram receiver thread) and taken by the algorithm by (sender, kind,
 * step). A receiving side that fails records its failure, and every take then throws it.
 */
final class Mailbox {
    /** Matches any kind or any step in {@link #take}. */
    static final int ANY = -1;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition arrived = lock.newCondition();
    private final List<Message> messages = new ArrayList<>();
    private IOException failure;

    void put(Message m) {
        lock.lock();
        try {
            messages.add(m);
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
    }

    void fail(IOException e) {
        lock.lock();
        try {
            if (failure == null) {
                failure = e;
            }
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** The first message from {@code from} of {@code kind} at {@code step}, waiting until the deadline. */
    Message take(int from, int kind, int step, long deadlineNanos) throws IOException {
        lock.lock();
        try {
            while (true) {
                for (int i = 0; i < messages.size(); i++) {
                    Message m = messages.get(i);
                    if (m.from == from && (kind == ANY || m.kind == kind) && (step == ANY || m.step == step)) {
                        messages.remove(i);
                        return m;
                    }
                }
                if (failure != null) {
                    throw new IOException(failure.getMessage(), failure);
                }
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    throw new IOException("timed out waiting for " + (kind == ANY ? "a message"
                            : Message.kindName(kind)) + " from node " + from
                            + (step == ANY ? "" : " (step " + step + ")"));
                }
                arrived.await(left, TimeUnit.NANOSECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted waiting for a message");
        } finally {
            lock.unlock();
        }
    }
}
