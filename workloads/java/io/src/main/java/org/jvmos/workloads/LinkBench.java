package org.jvmos.workloads;

import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;

/**
 * Establishing links, for the platform constants C_link and C_file (paper section 4).
 *
 * <p>{@code --mode accept}: a server socket on 127.0.0.1; the main thread accepts {@code links}
 * connections and closes each at once, while a client thread opens them one after another
 * (closing its ends {@code batch} at a time): the accept path of a server under load, with
 * the acceptor blocking and being woken for each connection.
 *
 * <p>{@code --mode open}: {@code new FileInputStream(file).close()} {@code links} times on a
 * small temporary file (open + close, as a server opening a file per request).
 *
 * <pre>LinkBench --mode accept|open --links N [--batch B]</pre>
 */
public final class LinkBench extends Workload {

    LinkBench() {
        super(List.of("mode", "links", "batch"), List.of());
    }

    public static void main(String[] args) {
        new LinkBench().runAndExitOnFailure(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        String mode = cli.string("mode", null);
        int links = cli.intValue("links", 2000, 1, 10_000_000);
        int batch = cli.intValue("batch", 100, 1, 4096);
        if (!mode.equals("accept") && !mode.equals("open")) {
            throw new Cli.UsageException("--mode must be accept or open, got '" + mode + "'");
        }
        long t0 = System.nanoTime();
        long linkNs;
        try {
            linkNs = mode.equals("accept") ? accept(links, batch) : open(links);
        } catch (IOException e) {
            err.println("error: " + mode + ": " + e.getMessage());
            return 1;
        }
        out.println(Cli.summary("link-bench")
                .put("mode", mode)
                .put("ops", links)
                .put("link_ns_total", linkNs)
                .put("ns_per_link", (double) linkNs / links)
                .put("elapsed_ns", System.nanoTime() - t0)
                .put("java_version", Cli.javaVersion()));
        return 0;
    }

    /**
     * A server thread blocks in accept() while a client thread connects, one connection after
     * another, as a server's acceptor thread does under load; the server closes each accepted
     * socket at once. Returns the time the server spent in accept() (wall, for reference).
     */
    private static long accept(int links, int batch) throws IOException {
        try (ServerSocket server = new ServerSocket()) {
            // a backlog that never fills: a full one drops SYNs, and the 1 s retransmission
            // would be timed instead of the accept
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 4096);
            int port = server.getLocalPort();
            IOException[] clientError = new IOException[1];
            Thread client = new Thread(() -> {
                List<Socket> open = new ArrayList<>(batch);
                try {
                    for (int i = 0; i < links; i++) {
                        open.add(new Socket(InetAddress.getLoopbackAddress(), port));
                        if (open.size() == batch) {
                            for (Socket c : open) {
                                c.close();
                            }
                            open.clear();
                        }
                    }
                    for (Socket c : open) {
                        c.close();
                    }
                } catch (IOException e) {
                    clientError[0] = e;
                }
            }, "link-bench-client");
            client.start();
            long acceptNs = 0;
            for (int i = 0; i < links; i++) {
                long a = System.nanoTime();
                Socket s = server.accept();
                acceptNs += System.nanoTime() - a;
                s.close();
            }
            try {
                client.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (clientError[0] != null) {
                throw clientError[0];
            }
            return acceptNs;
        }
    }

    private static long open(int links) throws IOException {
        File f = File.createTempFile("jvmos-link", ".dat");
        try {
            Files.write(f.toPath(), new byte[128]);
            long a = System.nanoTime();
            for (int i = 0; i < links; i++) {
                new FileInputStream(f).close();
            }
            return System.nanoTime() - a;
        } finally {
            if (!f.delete()) {
                f.deleteOnExit();
            }
        }
    }
}
