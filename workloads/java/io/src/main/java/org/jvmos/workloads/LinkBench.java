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
 * <p>{@code --mode accept}: a server socket on 127.0.0.1 with a backlog of {@code batch}; a
 * client opens {@code batch} connections (the kernel completes them into the backlog), then the
 * server accepts them all and closes both ends. Because the connections are already waiting,
 * accept() does not block: what it costs is the kernel's and the JDK's work of accepting.
 * Repeated until {@code links} connections have been accepted.
 *
 * <p>{@code --mode open}: {@code new FileInputStream(file).close()} {@code links} times on a
 * small temporary file (open + close, as a server opening a file per request).
 *
 * <pre>LinkBench --mode accept|open --links N [--batch B]</pre>
 */
public final class LinkBench {

    private LinkBench() {
    }

    public static void main(String[] args) {
        int rc = run(args, System.out, System.err);
        System.out.flush();
        if (rc != 0) {
            System.exit(rc);
        }
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        String mode;
        int links;
        int batch;
        try {
            Cli cli = Cli.parse(args, List.of("mode", "links", "batch"), List.of());
            mode = cli.string("mode", null);
            links = cli.intValue("links", 2000, 1, 10_000_000);
            batch = cli.intValue("batch", 100, 1, 4096);
            if (!mode.equals("accept") && !mode.equals("open")) {
                throw new Cli.UsageException("--mode must be accept or open, got '" + mode + "'");
            }
        } catch (Cli.UsageException e) {
            err.println("error: " + e.getMessage());
            return Cli.EXIT_USAGE;
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

    /** Returns the time spent in accept() calls only. */
    private static long accept(int links, int batch) throws IOException {
        long acceptNs = 0;
        try (ServerSocket server = new ServerSocket()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), batch);
            int port = server.getLocalPort();
            List<Socket> clients = new ArrayList<>(batch);
            for (int done = 0; done < links; ) {
                int n = Math.min(batch, links - done);
                for (int i = 0; i < n; i++) {
                    clients.add(new Socket(InetAddress.getLoopbackAddress(), port));
                }
                for (int i = 0; i < n; i++) {
                    long a = System.nanoTime();
                    Socket s = server.accept();
                    acceptNs += System.nanoTime() - a;
                    s.close();
                }
                for (Socket c : clients) {
                    c.close();
                }
                clients.clear();
                done += n;
            }
        }
        return acceptNs;
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
