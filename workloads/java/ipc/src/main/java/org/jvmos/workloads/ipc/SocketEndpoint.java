package org.jvmos.workloads.ipc;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.List;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The server of the socket primitives: a {@link ServerSocket} on 127.0.0.1, an accept thread,
 * and a platform thread per connection that answers requests until the client closes.
 *
 * <p>{@code sockets}: an ObjectOutputStream and an ObjectInputStream on the socket's streams
 * (the output one created and flushed first, so that neither side waits for the other's stream
 * header); each {@link Request} read is answered by one {@link Reply}, followed by
 * {@code reset()} (so that the next reply is written in full rather than as back-references, and
 * the handle tables do not grow) and {@code flush()}.
 *
 * <p>{@code sockets-text}: {@link TextCodec} lines, writeChars and readLine.
 *
 * <p>The socket's streams are used as they are unless {@code --buffer} asks for buffered ones:
 * ObjectOutputStream then writes in blocks of at most 1 KiB and ObjectInputStream reads a field
 * at a time; writeChars writes a byte at a time and readLine reads one.
 */
final class SocketEndpoint extends Endpoint {

    private final ServerSocket server;
    private final Options options;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;

    private SocketEndpoint(Primitive primitive, ServerLogic logic, ServerSocket server, Options options) {
        super(primitive, logic);
        this.server = server;
        this.options = options;
        this.acceptor = new Thread(new Acceptor(), "ipc-accept");
        acceptor.setDaemon(true);
    }

    static SocketEndpoint start(Primitive primitive, int port, ServerLogic logic, Options options)
            throws IOException {
        ServerSocket ss = new ServerSocket();
        try {
            ss.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), options.backlog);
        } catch (IOException e) {
            ss.close();
            throw e;
        }
        SocketEndpoint e = new SocketEndpoint(primitive, logic, ss, options);
        e.acceptor.start();
        return e;
    }

    @Override
    int port() {
        return server.getLocalPort();
    }

    @Override
    public void close() {
        closing = true;
        try {
            server.close();
        } catch (IOException e) {
            // closed anyway
        }
        for (Socket s : open) {
            closeQuietly(s);
        }
        try {
            acceptor.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closed anyway
        }
    }

    private final class Acceptor implements Runnable {
        @Override
        public void run() {
            while (!closing) {
                Socket s;
                try {
                    s = server.accept();
                } catch (IOException e) {
                    if (!closing) {
                        error("accept: " + e.getMessage());
                    }
                    if (server.isClosed()) {
                        return;
                    }
                    try {
                        Thread.sleep(10);           // e.g. out of file descriptors: do not spin
                    } catch (InterruptedException ie) {
                        return;
                    }
                    continue;
                }
                long n = connections.incrementAndGet();
                open.add(s);
                if (closing) {
                    closeQuietly(s);
                    return;
                }
                Thread t = new Thread(new Connection(s), "ipc-conn-" + n);
                t.setDaemon(true);
                t.start();
            }
        }
    }

    private final class Connection implements Runnable {
        private final Socket socket;

        Connection(Socket socket) {
            this.socket = socket;
        }

        @Override
        public void run() {
            try {
                if (options.tcpNoDelay) {
                    socket.setTcpNoDelay(true);
                }
                OutputStream out = socket.getOutputStream();
                InputStream in = socket.getInputStream();
                if (options.buffer > 0) {
                    out = new BufferedOutputStream(out, options.buffer);
                    in = new BufferedInputStream(in, options.buffer);
                }
                if (primitive == Primitive.SOCKETS) {
                    serveObjects(in, out);
                } else {
                    serveText(in, out);
                }
            } catch (EOFException e) {
                // the client closed between messages
            } catch (SocketException e) {
                if (!closing && !"Socket closed".equals(e.getMessage())) {
                    error("connection: " + e.getMessage());
                }
            } catch (IOException | ClassNotFoundException | RuntimeException e) {
                error("connection: " + e);
            } finally {
                open.remove(socket);
                closeQuietly(socket);
            }
        }
    }

    private void serveObjects(InputStream rawIn, OutputStream rawOut) throws IOException, ClassNotFoundException {
        ObjectOutputStream out = new ObjectOutputStream(rawOut);
        out.flush();
        ObjectInputStream in = new ObjectInputStream(rawIn);
        while (true) {
            Object request = in.readObject();
            out.writeObject(answer(request));
            out.reset();
            out.flush();
        }
    }

    /** The reply to one request of the {@code sockets} primitive. */
    Reply answer(Object message) {
        if (!(message instanceof Request)) {
            logic.served();
            logic.failed();
            return new Reply(null, null, "not a Request: "
                    + (message == null ? "null" : message.getClass().getName()));
        }
        Request r = (Request) message;
        Benchmark b = Benchmark.find(r.benchmark);
        if (b == null) {
            logic.served();
            logic.failed();
            return new Reply(null, null, "unknown benchmark '" + r.benchmark + "'");
        }
        Integer value = null;
        Vector<Integer> vector = null;
        try {
            switch (b) {
                case SS:
                    value = java.util.Objects.requireNonNull(r.value, "SS needs a value");
                    break;
                case GRAB:
                    value = logic.grab(r.value);
                    break;
                case SV: {
                    int n = ServerLogic.vectorSize(r.value);
                    vector = new Vector<>(n);
                    for (int i = 0; i < n; i++) {
                        vector.add(i);
                    }
                    break;
                }
                case FACT: {
                    int[] f = ServerLogic.factors(r.value);
                    vector = new Vector<>(f.length);
                    for (int x : f) {
                        vector.add(x);
                    }
                    break;
                }
                case VS:
                    value = ServerLogic.sum(r.vector);
                    break;
                case GCD:
                    value = ServerLogic.gcd(r.vector);
                    break;
                case VV:
                    vector = java.util.Objects.requireNonNull(r.vector, "VV needs a vector");
                    break;
                case REV: {
                    List<Integer> v = r.vector;
                    int n = v.size();
                    vector = new Vector<>(n);
                    for (int i = n - 1; i >= 0; i--) {
                        vector.add(v.get(i));
                    }
                    break;
                }
                default:
                    throw new IllegalStateException(b.name());
            }
        } catch (RuntimeException e) {
            logic.served();
            logic.failed();
            return new Reply(null, null, b.name() + ": " + e.getMessage());
        }
        if (logic.served()) {
            if (vector != null) {
                vector = new Vector<>(vector);
                if (vector.isEmpty()) {
                    vector.add(0);
                } else {
                    vector.set(0, ServerLogic.tamper(vector.get(0)));
                }
            } else {
                value = ServerLogic.tamper(value);
            }
        }
        return new Reply(value, vector, null);
    }

    private void serveText(InputStream rawIn, OutputStream rawOut) throws IOException {
        DataInputStream in = new DataInputStream(rawIn);
        DataOutputStream out = new DataOutputStream(rawOut);
        String line;
        while ((line = TextCodec.read(in)) != null) {
            TextCodec.write(out, answerText(line));
        }
    }

    /** The reply line to one request line of the {@code sockets-text} primitive. */
    String answerText(String line) {
        String head = TextCodec.head(line);
        Benchmark b = Benchmark.find(head);
        if (b == null) {
            logic.served();
            logic.failed();
            return TextCodec.failure("unknown benchmark '" + head + "'");
        }
        int value = 0;
        int[] vector = null;
        try {
            int[] args = TextCodec.ints(line);
            if (!b.sendsVector() && args.length != 1) {
                throw new IllegalArgumentException("expected one number, got " + args.length);
            }
            switch (b) {
                case SS:
                    value = args[0];
                    break;
                case GRAB:
                    value = logic.grab(args[0]);
                    break;
                case SV: {
                    int n = ServerLogic.vectorSize(args[0]);
                    vector = new int[n];
                    for (int i = 0; i < n; i++) {
                        vector[i] = i;
                    }
                    break;
                }
                case FACT:
                    vector = ServerLogic.factors(args[0]);
                    break;
                case VS:
                    value = ServerLogic.sum(args);
                    break;
                case GCD:
                    value = ServerLogic.gcd(args);
                    break;
                case VV:
                    vector = args;
                    break;
                case REV: {
                    int n = args.length;
                    vector = new int[n];
                    for (int i = 0; i < n; i++) {
                        vector[i] = args[n - 1 - i];
                    }
                    break;
                }
                default:
                    throw new IllegalStateException(b.name());
            }
        } catch (IOException | RuntimeException e) {
            logic.served();
            logic.failed();
            return TextCodec.failure(b.name() + ": " + e.getMessage());
        }
        if (logic.served()) {
            if (vector != null) {
                vector = vector.length == 0 ? new int[] {0} : vector.clone();
                vector[0] = ServerLogic.tamper(vector[0]);
            } else {
                value = ServerLogic.tamper(value);
            }
        }
        return vector != null ? TextCodec.answer(vector) : TextCodec.answer(value);
    }
}
