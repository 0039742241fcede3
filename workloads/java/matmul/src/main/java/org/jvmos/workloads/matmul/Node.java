package org.jvmos.workloads.matmul;

import java.io.IOException;
import org.jvmos.workloads.GcRecord;

/**
 * A node's side of the communication, as the algorithms use it: every send and receive of a
 * multiplication message is timed with {@link System#nanoTime} around the call (the seed's
 * communication time) and counted (calls and application-level bytes). Control messages
 * (SETUP, DONE, STATS) are neither timed nor counted.
 */
final class Node implements AutoCloseable {
    final int self;
    final Transport transport;
    final Mailbox mailbox = new Mailbox();
    final long deadlineNanos;

    long sendNanos;
    long recvNanos;
    long sends;
    long bytesSent;
    long bytesReceived;

    Node(int self, Transport transport, long deadlineNanos) {
        this.self = self;
        this.transport = transport;
        this.deadlineNanos = deadlineNanos;
    }

    int open(int nodes, int managerPort) throws IOException {
        return transport.open(self, nodes, managerPort, mailbox);
    }

    void send(int to, Message m) throws IOException {
        if (!m.counted()) {
            transport.send(to, m);
            return;
        }
        long t0 = System.nanoTime();
        transport.send(to, m);
        sendNanos += System.nanoTime() - t0;
        sends++;
        bytesSent += m.bytes();
    }

    Message receive(int from, int kind, int step) throws IOException {
        long t0 = System.nanoTime();
        Message m = mailbox.take(from, kind, step, deadlineNanos);
        if (m.counted()) {
            recvNanos += System.nanoTime() - t0;
            bytesReceived += m.bytes();
        }
        return m;
    }

    /** The STATS payload: send ns, receive ns, sends, bytes sent, bytes received, retransmissions. */
    /** This node's communication figures, then its JVM's garbage collection so far
     *  (GcRecord.snapshot(), in GcRecord.KEYS order): what a worker sends the manager at the end. */
    int[] statsWords() {
        long[] gc = GcRecord.snapshot();
        long[] v = new long[STATS_LONGS + gc.length];
        long[] own = {sendNanos, recvNanos, sends, bytesSent, bytesReceived, transport.retransmissions()};
        System.arraycopy(own, 0, v, 0, STATS_LONGS);
        System.arraycopy(gc, 0, v, STATS_LONGS, gc.length);
        return Message.packLongs(v);
    }

    /** How many longs of statsWords() come before the GC figures. */
    static final int STATS_LONGS = 6;

    @Override
    public void close() {
        transport.close();
    }
}
