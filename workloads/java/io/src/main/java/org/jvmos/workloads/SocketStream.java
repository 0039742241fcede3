package org.jvmos.workloads;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Loopback TCP stream inside one JVM. A server thread accepts one connection on 127.0.0.1 (port
 * 0) and reads/discards everything through a plain InputStream into a 64 KiB byte[]; the client
 * writes a byte[size] {@code writes} times, either through java.net.Socket's unbuffered
 * OutputStream (default) or, with {@code --nio}, through a SocketChannel and a heap ByteBuffer
 * (ByteBuffer.wrap) - both paths copy the heap bytes into a temporary direct buffer inside the
 * JDK before the write(2) system call.
 *
 * <pre>SocketStream --writes N --size S [--nio]</pre>
 */
public final class SocketStream extends Workload {

    private static final int READ_BUFFER = 64 * 1024;

    SocketStream() {
        super(List.of("writes", "size"), List.of("nio"));
    }

    public static void main(String[] args) {
        new SocketStream().runAndExitOnFailure(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        long writes = cli.longValue("writes", 100_000L, 0, Long.MAX_VALUE / (64 << 20));
        int size = cli.intValue("size", 1024, 1, 64 << 20);
        boolean nio = cli.flag("nio");

        long expected = writes * size;
        AtomicLong received = new AtomicLong();
        AtomicReference<Throwable> serverError = new AtomicReference<>();
        byte[] payload = new byte[size];
        Arrays.fill(payload, (byte) 's');

        long elapsed;
        InetAddress loopback;
        try {
            loopback = InetAddress.getByName("127.0.0.1");
        } catch (IOException e) {
            err.println("error: cannot resolve 127.0.0.1: " + e.getMessage());
            return 1;
        }
        try (ServerSocket server = new ServerSocket(0, 1, loopback)) {
            Thread reader = new Thread(() -> {
                try (Socket s = server.accept(); InputStream in = s.getInputStream()) {
                    byte[] buf = new byte[READ_BUFFER];
                    long total = 0;
                    int n;
                    while ((n = in.read(buf)) != -1) {
                        total += n;
                    }
                    received.set(total);
                } catch (Throwable t) {
                    serverError.set(t);
                }
            }, "socket-stream-server");
            reader.setDaemon(true);
            reader.start();

            InetSocketAddress addr = new InetSocketAddress(loopback, server.getLocalPort());
            if (nio) {
                try (SocketChannel ch = SocketChannel.open(addr)) {
                    ByteBuffer bb = ByteBuffer.wrap(payload);
                    long t0 = System.nanoTime();
                    for (long i = 0; i < writes; i++) {
                        bb.clear();
                        while (bb.hasRemaining()) {
                            ch.write(bb);
                        }
                    }
                    elapsed = System.nanoTime() - t0;
                }
            } else {
                try (Socket client = new Socket()) {
                    client.connect(addr);
                    OutputStream os = client.getOutputStream();
                    long t0 = System.nanoTime();
                    for (long i = 0; i < writes; i++) {
                        os.write(payload);
                    }
                    elapsed = System.nanoTime() - t0;
                }
            }
            reader.join(60_000);
            if (reader.isAlive()) {
                err.println("error: server thread did not finish within 60 s");
                return 1;
            }
        } catch (IOException e) {
            err.println("error: socket: " + e.getMessage());
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("error: interrupted");
            return 1;
        }

        Throwable t = serverError.get();
        if (t != null) {
            err.println("error: server: " + t);
            return 1;
        }
        long got = received.get();
        if (got != expected) {
            err.println("error: server received " + got + " bytes, expected " + expected);
            return 1;
        }

        out.println(Cli.summary("socket-stream")
                .put("mode", nio ? "nio" : "stream")
                .put("ops", writes)
                .put("bytes", got)
                .put("size", size)
                .put("elapsed_ns", elapsed)
                .put("ns_per_op", writes == 0 ? 0.0 : (double) elapsed / writes)
                .put("java_version", Cli.javaVersion()));
        return 0;
    }
}
