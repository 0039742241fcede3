package org.jvmos.workloads.matmul;

import java.io.Externalizable;
import java.io.IOException;
import java.io.ObjectInput;
import java.io.ObjectOutput;
import java.rmi.Remote;
import java.rmi.RemoteException;

/**
 * RMI with the argument an {@link Externalizable} class: the program writes and reads the
 * header ints and the array's length and elements itself, one {@code writeInt} per element. A
 * send is one remote call, {@code deliver(message)}, on the receiving node's exported mailbox.
 */
public final class RmiExternalizableTransport implements Transport {

    /** The remote interface every node exports. */
    public interface ExternalizableMailbox extends Remote {
        void deliver(ExternalizableMessage m) throws RemoteException;
    }

    /** The argument, marshalled by hand. */
    public static final class ExternalizableMessage implements Externalizable {
        private static final long serialVersionUID = 1L;
        int kind;
        int from;
        int step;
        int rows;
        int cols;
        int[] data;

        /** Required by Externalizable. */
        public ExternalizableMessage() {
        }

        @Override
        public void writeExternal(ObjectOutput out) throws IOException {
            out.writeInt(kind);
            out.writeInt(from);
            out.writeInt(step);
            out.writeInt(rows);
            out.writeInt(cols);
            out.writeInt(data.length);
            for (int v : data) {
                out.writeInt(v);
            }
        }

        @Override
        public void readExternal(ObjectInput in) throws IOException {
            kind = in.readInt();
            from = in.readInt();
            step = in.readInt();
            rows = in.readInt();
            cols = in.readInt();
            int length = in.readInt();
            if (length < 0 || length > Matmul.MAX_INTS) {
                throw new IOException("bad array length " + length);
            }
            data = new int[length];
            for (int i = 0; i < length; i++) {
                data[i] = in.readInt();
            }
        }
    }

    private static final class Receiver implements ExternalizableMailbox {
        private final Mailbox mailbox;

        Receiver(Mailbox mailbox) {
            this.mailbox = mailbox;
        }

        @Override
        public void deliver(ExternalizableMessage m) {
            mailbox.put(new Message(m.kind, m.from, m.step, m.rows, m.cols, m.data));
        }
    }

    private final RmiSupport rmi = new RmiSupport();

    @Override
    public String mechanism() {
        return "rmi-externalizable";
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
        ExternalizableMessage e = new ExternalizableMessage();
        e.kind = m.kind;
        e.from = m.from;
        e.step = m.step;
        e.rows = m.rows;
        e.cols = m.cols;
        e.data = m.data;
        ((ExternalizableMailbox) rmi.stub(to)).deliver(e);
    }

    @Override
    public void close() {
        rmi.close();
    }
}
