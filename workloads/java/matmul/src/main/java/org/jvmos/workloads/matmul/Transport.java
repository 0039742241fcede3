package org.jvmos.workloads.matmul;

import java.io.IOException;

/**
 * One communication mechanism, as seen by one node: it delivers a {@link Message} to another
 * node and puts the messages it receives in the node's {@link Mailbox}. Each mechanism lives in
 * its own source file(s), so that its programming effort can be counted on its own.
 */
interface Transport extends AutoCloseable {

    /** The mechanism's name as given to {@code --mechanism}. */
    String mechanism();

    /**
     * Opens this node's endpoint on 127.0.0.1: {@code self} is the node id, {@code nodes} the
     * number of nodes (manager and workers), {@code managerPort} the manager's announced port (0
     * for the manager itself). Returns the port this node announces.
     */
    int open(int self, int nodes, int managerPort, Mailbox mailbox) throws IOException;

    /** Every node's announced port, index = node id (sent to the workers in SETUP). */
    void peers(int[] ports) throws IOException;

    /** Delivers {@code m} to node {@code to}; returns when the mechanism is done sending it. */
    void send(int to, Message m) throws IOException;

    /** Data packets sent again after a timeout (datagram only; 0 for the others). */
    default long retransmissions() {
        return 0;
    }

    @Override
    void close();
}
