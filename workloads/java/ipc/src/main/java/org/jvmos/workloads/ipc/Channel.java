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
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URL;
import java.net.URLConnection;
import java.util.Vector;
import org.apache.xmlrpc.XmlRpcException;
import org.apache.xmlrpc.client.XmlRpcClient;
import org.apache.xmlrpc.client.XmlRpcClientConfigImpl;
import org.apache.xmlrpc.client.XmlRpcSunHttpTransport;
import org.apache.xmlrpc.client.XmlRpcTransport;
import org.apache.xmlrpc.client.XmlRpcTransportFactory;

/**
 * The client side of one trial with one primitive: open (connect), calls, close.
 *
 * <p>A call's argument is an Integer or the primitive's form of a vector, made once per trial
 * by {@link #vector(int[])}: a {@code Vector<Integer>} for {@code sockets} and {@code xmlrpc}
 * (the type seed 000's Java 1.5 code passed), the ints themselves for {@code sockets-text}. The
 * answer is an Integer, or a vector as the primitive delivers it (a {@code Vector}, an
 * {@code Object[]}, an {@code int[]}).
 */
abstract class Channel implements AutoCloseable {

    /** The server answered a call with an error. */
    static final class ServerError extends Exception {
        private static final long serialVersionUID = 1L;

        ServerError(String message) {
            super(message);
        }
    }

    /** The connection could not be made (the trial has not started, or a new one was needed). */
    static final class ConnectFailure extends IOException {
        private static final long serialVersionUID = 1L;

        ConnectFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** What a channel needs to open. */
    static final class Target {
        final int port;
        final int connectTimeoutMs;
        /** System.nanoTime() by which the trial must be over. */
        final long deadline;
        final int buffer;
        final boolean tcpNoDelay;

        Target(int port, int connectTimeoutMs, long deadline, int buffer, boolean tcpNoDelay) {
            this.port = port;
            this.connectTimeoutMs = connectTimeoutMs;
            this.deadline = deadline;
            this.buffer = buffer;
            this.tcpNoDelay = tcpNoDelay;
        }

        /** Milliseconds left until the deadline, at least 1. */
        int leftMs() {
            long left = (deadline - System.nanoTime()) / 1_000_000;
            return (int) Math.max(1, Math.min(Integer.MAX_VALUE, left));
        }
    }

    static Channel open(Primitive primitive, Target target) throws IOException {
        switch (primitive) {
            case SOCKETS:
                return new ObjectStreams(target);
            case SOCKETS_TEXT:
                return new Text(target);
            case XMLRPC:
                return new XmlRpc(target);
            default:
                throw new IllegalStateException(primitive.label);
        }
    }

    /** The primitive's form of a vector argument. */
    abstract Object vector(int[] ints);

    /** One call: sends {@code argument} for {@code b} and returns the decoded answer. */
    abstract Object call(Benchmark b, Object argument) throws IOException, ServerError;

    /** Bytes the application wrote to the connection(s) (see the README for what is counted). */
    abstract long bytesSent();

    abstract long bytesReceived();

    @Override
    public abstract void close();

    static Vector<Integer> boxed(int[] ints) {
        Vector<Integer> v = new Vector<>(ints.length);
        for (int x : ints) {
            v.add(x);
        }
        return v;
    }

    /** A connected socket with the target's options; a ConnectFailure if it cannot connect. */
    static Socket connect(Target t) throws ConnectFailure {
        Socket s = new Socket();
        try {
            s.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), t.port),
                    Math.min(t.connectTimeoutMs, t.leftMs()));
            if (t.tcpNoDelay) {
                s.setTcpNoDelay(true);
            }
            s.setSoTimeout(t.leftMs());
            return s;
        } catch (IOException e) {
            try {
                s.close();
            } catch (IOException ignored) {
                // nothing to close
            }
            throw new ConnectFailure(e.getMessage(), e);
        }
    }

    /** A socket primitive: one TCP connection for the whole trial, counted streams. */
    private abstract static class SocketChannel extends Channel {
        final Socket socket;
        final Counting.Out sent;
        final Counting.In received;
        final OutputStream out;
        final InputStream in;

        SocketChannel(Target t) throws IOException {
            socket = connect(t);
            sent = new Counting.Out(socket.getOutputStream());
            received = new Counting.In(socket.getInputStream());
            out = t.buffer > 0 ? new BufferedOutputStream(sent, t.buffer) : sent;
            in = t.buffer > 0 ? new BufferedInputStream(received, t.buffer) : received;
        }

        @Override
        long bytesSent() {
            return sent.bytes;
        }

        @Override
        long bytesReceived() {
            return received.bytes;
        }

        @Override
        public void close() {
            try {
                socket.close();
            } catch (IOException e) {
                // closed anyway
            }
        }
    }

    /** {@code sockets}: Request and Reply objects through ObjectOutputStream/ObjectInputStream. */
    private static final class ObjectStreams extends SocketChannel {
        private final ObjectOutputStream objectsOut;
        private final ObjectInputStream objectsIn;

        ObjectStreams(Target t) throws IOException {
            super(t);
            try {
                objectsOut = new ObjectOutputStream(out);
                objectsOut.flush();
                objectsIn = new ObjectInputStream(in);
            } catch (IOException e) {
                close();
                throw e;
            }
        }

        @Override
        Object vector(int[] ints) {
            return boxed(ints);
        }

        @Override
        @SuppressWarnings("unchecked")
        Object call(Benchmark b, Object argument) throws IOException, ServerError {
            Request r = b.sendsVector() ? new Request(b.name(), null, (Vector<Integer>) argument)
                    : new Request(b.name(), (Integer) argument, null);
            objectsOut.writeObject(r);
            objectsOut.reset();
            objectsOut.flush();
            Object answer;
            try {
                answer = objectsIn.readObject();
            } catch (ClassNotFoundException e) {
                throw new IOException("unknown class in the reply: " + e.getMessage(), e);
            }
            if (!(answer instanceof Reply)) {
                throw new IOException("the reply is not a Reply but "
                        + (answer == null ? "null" : answer.getClass().getName()));
            }
            Reply reply = (Reply) answer;
            if (reply.error != null) {
                throw new ServerError(reply.error);
            }
            return reply.vector != null ? reply.vector : reply.value;
        }
    }

    /** {@code sockets-text}: lines written with writeChars and read with readLine. */
    private static final class Text extends SocketChannel {
        private final DataOutputStream dataOut;
        private final DataInputStream dataIn;

        Text(Target t) throws IOException {
            super(t);
            dataOut = new DataOutputStream(out);
            dataIn = new DataInputStream(in);
        }

        @Override
        Object vector(int[] ints) {
            return ints;
        }

        @Override
        Object call(Benchmark b, Object argument) throws IOException, ServerError {
            String request = b.sendsVector() ? TextCodec.request(b, (int[]) argument)
                    : TextCodec.request(b, (Integer) argument);
            TextCodec.write(dataOut, request);
            String line = TextCodec.read(dataIn);
            if (line == null) {
                throw new EOFException("the server closed the connection");
            }
            String head = TextCodec.head(line);
            if ("!".equals(head)) {
                throw new ServerError(TextCodec.rest(line));
            }
            if (!"=".equals(head)) {
                throw new IOException("malformed reply line (head '" + head + "')");
            }
            int[] ints = TextCodec.ints(line);
            if (b.returnsVector()) {
                return ints;
            }
            if (ints.length != 1) {
                throw new IOException("expected one number in the reply, got " + ints.length);
            }
            return ints[0];
        }
    }

    /**
     * {@code xmlrpc}: one XmlRpcClient for the trial, with its default transport (the JDK's
     * HttpURLConnection), subclassed only to count the request and response bodies and to bound
     * each connection by the trial's deadline. The XML-RPC server closes each connection after
     * its response, so every call opens a TCP connection of its own.
     */
    private static final class XmlRpc extends Channel {
        private final XmlRpcClient client;
        private final Target target;
        long sent;
        long received;

        XmlRpc(Target t) throws IOException {
            target = t;
            XmlRpcClientConfigImpl config = new XmlRpcClientConfigImpl();
            try {
                config.setServerURL(URI.create("http://127.0.0.1:" + t.port + "/RPC2").toURL());
            } catch (java.net.MalformedURLException e) {
                throw new IOException(e.getMessage(), e);
            }
            client = new XmlRpcClient();
            client.setConfig(config);
            client.setTransportFactory(new CountingFactory(this));
        }

        @Override
        Object vector(int[] ints) {
            return boxed(ints);
        }

        @Override
        Object call(Benchmark b, Object argument) throws IOException, ServerError {
            try {
                return client.execute(b.method(), new Object[] {argument});
            } catch (XmlRpcException e) {
                for (Throwable c = e; c != null; c = c.getCause()) {
                    if (c instanceof ConnectException) {
                        throw new ConnectFailure(c.getMessage(), e);
                    }
                }
                for (Throwable c = e; c != null; c = c.getCause()) {
                    if (c instanceof IOException) {
                        throw (IOException) c;
                    }
                }
                throw new ServerError(e.getMessage());
            }
        }

        @Override
        long bytesSent() {
            return sent;
        }

        @Override
        long bytesReceived() {
            return received;
        }

        @Override
        public void close() {
            // nothing held between calls: each call's connection is closed by then
        }
    }

    private static final class CountingFactory implements XmlRpcTransportFactory {
        private final XmlRpc channel;

        CountingFactory(XmlRpc channel) {
            this.channel = channel;
        }

        @Override
        public XmlRpcTransport getTransport() {
            return new CountingTransport(channel);
        }
    }

    /** The default Sun HTTP transport, counting bodies and bounding the connection's time. */
    private static final class CountingTransport extends XmlRpcSunHttpTransport {
        private final XmlRpc channel;

        CountingTransport(XmlRpc channel) {
            super(channel.client);
            this.channel = channel;
        }

        @Override
        protected URLConnection newURLConnection(URL url) throws IOException {
            URLConnection c = super.newURLConnection(url);
            int left = channel.target.leftMs();
            c.setConnectTimeout(Math.min(channel.target.connectTimeoutMs, left));
            c.setReadTimeout(left);
            return c;
        }

        @Override
        protected void setRequestHeader(String header, String value) {
            if ("Content-Length".equalsIgnoreCase(header)) {
                try {
                    channel.sent += Long.parseLong(value.trim());
                } catch (NumberFormatException e) {
                    // not counted
                }
            }
            super.setRequestHeader(header, value);
        }

        @Override
        protected InputStream getInputStream() throws XmlRpcException {
            return new CountedResponse(super.getInputStream(), channel);
        }
    }

    /** The response body, adding its bytes to the channel's count as they are read. */
    private static final class CountedResponse extends java.io.FilterInputStream {
        private final XmlRpc channel;

        CountedResponse(InputStream in, XmlRpc channel) {
            super(in);
            this.channel = channel;
        }

        @Override
        public int read() throws IOException {
            int b = in.read();
            if (b >= 0) {
                channel.received++;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = in.read(b, off, len);
            if (n > 0) {
                channel.received += n;
            }
            return n;
        }
    }
}
