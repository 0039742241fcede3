package org.jvmos.workloads.matmul;

import java.io.IOException;

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
    int[] statsWords() {
        return Message.packLongs(sendNanos, recvNanos, sends, bytesSent, bytesReceived,
                transport.retransmissions());
    }

    @Override
    public void close() {
        transport.close();
    }
}
