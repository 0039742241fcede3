package org.jvmos.workloads.matmul;

import java.io.IOException;
import java.io.Serializable;
import java.rmi.Remote;
import java.rmi.RemoteException;

/**
 * RMI with the argument a {@link Serializable} class: the JDK's generic serialization marshals
 * the fields (the int array included) by reflection. A send is one remote call,
 * {@code deliver(message)}, on the receiving node's exported mailbox.
 */
public final class RmiSerializableTransport implements Transport {

    /** The remote interface every node exports. */
    public interface SerializableMailbox extends Remote {
        void deliver(SerializableMessage m) throws RemoteException;
    }

    /** The argument: fields only, no marshalling code. */
    public static final class SerializableMessage implements Serializable {
        private static final long serialVersionUID = 1L;
        int kind;
        int from;
        int step;
        int rows;
        int cols;
        int[] data;
    }

    private static final class Receiver implements SerializableMailbox {
        private final Mailbox mailbox;

        Receiver(Mailbox mailbox) {
            this.mailbox = mailbox;
        }

        @Override
        public void deliver(SerializableMessage m) {
            mailbox.put(new Message(m.kind, m.from, m.step, m.rows, m.cols, m.data));
        }
    }

    private final RmiSupport rmi = new RmiSupport();

    @Override
    public String mechanism() {
        return "rmi-serializable";
    }

    @Override
    public int open(int self, int nodes, int managerPort, Mailbox mailbox) throws IOException {
        return rmi.open(self, nodes, managerPort, new Receiver(mailbox));
    }

    @Override
    public void peers(int[] ports) {
        // the registry names the peers
    }

    @Override
    public void send(int to, Message m) throws IOException {
        SerializableMessage s = new SerializableMessage();
        s.kind = m.kind;
        s.from = m.from;
        s.step = m.step;
        s.rows = m.rows;
        s.cols = m.cols;
        s.data = m.data;
        ((SerializableMailbox) rmi.stub(to)).deliver(s);
    }

    @Override
    public void close() {
        rmi.close();
    }
}
