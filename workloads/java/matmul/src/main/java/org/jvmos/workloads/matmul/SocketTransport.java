package org.jvmos.workloads.matmul;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * Stream sockets: every node listens on 127.0.0.1; a node opens one connection to each peer it
 * sends to, the first time, and writes messages on it through a DataOutputStream over a
 * BufferedOutputStream (one flush per message). Each accepted connection has a reader thread
 * that reads messages through a DataInputStream over a BufferedInputStream into the mailbox.
 * TCP_NODELAY is set: every message is flushed whole, so Nagle's algorithm could only delay it.
 */
final class SocketTransport implements Transport {
    private static final int BUFFER = 64 * 1024;
    private static final int CONNECT_TIMEOUT_MS = 10_000;

    private ServerSocket server;
    private Mailbox mailbox;
    private int self;
    private int[] ports;
    private Socket[] sockets;
    private DataOutputStream[] outs;
    private final List<Socket> accepted = new ArrayList<>();
    private volatile boolean closed;

    @Override
    public String mechanism() {
        return "socket";
    }

    @Override
    public int open(int self, int nodes, int managerPort, Mailbox mailbox) throws IOException {
        this.self = self;
        this.mailbox = mailbox;
        this.ports = new int[nodes];
        this.ports[0] = managerPort;
        this.sockets = new Socket[nodes];
        this.outs = new DataOutputStream[nodes];
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::acceptLoop, "matmul-socket-accept");
        t.setDaemon(true);
        t.start();
        return server.getLocalPort();
    }

    @Override
    public void peers(int[] all) {
        System.arraycopy(all, 0, ports, 0, Math.min(all.length, ports.length));
    }

    private void acceptLoop() {
        while (!closed) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                if (!closed) {
                    mailbox.fail(new IOException("socket accept failed: " + e.getMessage(), e));
                }
                return;
            }
            synchronized (accepted) {
                accepted.add(s);
            }
            Thread r = new Thread(() -> readLoop(s), "matmul-socket-reader");
            r.setDaemon(true);
            r.start();
        }
    }

    private void readLoop(Socket s) {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), BUFFER))) {
            while (true) {
                int kind;
                try {
                    kind = in.readInt();
                } catch (EOFException e) {
                    return; // the peer closed between messages
                }
                int from = in.readInt();
                int step = in.readInt();
                int rows = in.readInt();
                int cols = in.readInt();
                int length = in.readInt();
                if (length < 0 || length > Matmul.MAX_INTS) {
                    throw new IOException("bad message length " + length);
                }
                int[] data = new int[length];
                for (int i = 0; i < length; i++) {
                    data[i] = in.readInt();
                }
                mailbox.put(new Message(kind, from, step, rows, cols, data));
            }
        } catch (IOException e) {
            if (!closed) {
                mailbox.fail(new IOException("socket read failed: " + e.getMessage(), e));
            }
        }
    }

    @Override
    public void send(int to, Message m) throws IOException {
        DataOutputStream out = outs[to];
        if (out == null) {
            if (ports[to] == 0) {
                throw new IOException("no port known for node " + to);
            }
            Socket s = new Socket();
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), ports[to]), CONNECT_TIMEOUT_MS);
            sockets[to] = s;
            out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream(), BUFFER));
            outs[to] = out;
        }
        out.writeInt(m.kind);
        out.writeInt(m.from);
        out.writeInt(m.step);
        out.writeInt(m.rows);
        out.writeInt(m.cols);
        out.writeInt(m.data.length);
        for (int v : m.data) {
            out.writeInt(v);
        }
        out.flush();
    }

    @Override
    public void close() {
        closed = true;
        for (int i = 0; sockets != null && i < sockets.length; i++) {
            closeQuietly(sockets[i]);
        }
        synchronized (accepted) {
            for (Socket s : accepted) {
                closeQuietly(s);
            }
        }
        if (server != null) {
            try {
                server.close();
            } catch (IOException e) {
                // closing anyway
            }
        }
    }

    private static void closeQuietly(Socket s) {
        if (s != null) {
            try {
                s.close();
            } catch (IOException e) {
                // closing anyway
            }
        }
    }
}
