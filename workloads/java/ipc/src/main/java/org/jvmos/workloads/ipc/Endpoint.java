package org.jvmos.workloads.ipc;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/** A running server of one primitive on 127.0.0.1: its port, its counts, and close. */
abstract class Endpoint implements AutoCloseable {

    /** Stream and socket options of the socket primitives. */
    static final class Options {
        /** Bytes of a BufferedInput/OutputStream around the socket's streams; 0 = none. */
        final int buffer;
        /** TCP_NODELAY on the server's accepted sockets. */
        final boolean tcpNoDelay;
        final int backlog;

        Options(int buffer, boolean tcpNoDelay, int backlog) {
            this.buffer = buffer;
            this.tcpNoDelay = tcpNoDelay;
            this.backlog = backlog;
        }

        static Options defaults() {
            return new Options(0, false, 50);
        }
    }

    final Primitive primitive;
    final ServerLogic logic;
    /** Connections accepted. */
    final AtomicLong connections = new AtomicLong();
    /** Connection-level failures (I/O errors, malformed messages), not failed calls. */
    final AtomicLong errors = new AtomicLong();
    private final AtomicReference<String> firstError = new AtomicReference<>();
    volatile boolean closing;

    Endpoint(Primitive primitive, ServerLogic logic) {
        this.primitive = primitive;
        this.logic = logic;
    }

    /** Starts a server of {@code primitive}; an IOException when it cannot listen. */
    static Endpoint start(Primitive primitive, int port, ServerLogic logic, Options options)
            throws IOException {
        if (primitive == Primitive.XMLRPC) {
            return XmlRpcEndpoint.start(port, logic, options);
        }
        return SocketEndpoint.start(primitive, port, logic, options);
    }

    abstract int port();

    /** Stops accepting and closes every connection; idempotent. */
    @Override
    public abstract void close();

    void error(String what) {
        if (closing) {
            return;
        }
        errors.incrementAndGet();
        firstError.compareAndSet(null, what);
    }

    String firstError() {
        return firstError.get();
    }
}
