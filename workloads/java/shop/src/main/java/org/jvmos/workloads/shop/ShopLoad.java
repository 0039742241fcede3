package org.jvmos.workloads.shop;

import org.jvmos.workloads.Cli;
import org.jvmos.workloads.Workload;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The load generator of the paper's experiment: {@code --threads} concurrent clients, each
 * retrieving {@code --pages} pages and then halting. Each client browses like a shopper with
 * its own session (catalog, category, product, item, add to cart, sign on, order, order list),
 * over hand-written HTTP/1.1 on plain sockets so that connection use is exact: a new TCP
 * connection per page by default (the paper counted connections), one per client with
 * {@code --keepalive}. Bounded in count (threads x pages) and in time ({@code --max-seconds}:
 * clients stop starting pages, sockets time out).
 *
 * <p>Last stdout line: JSON with pages, connections, bytes, errors, elapsed_ns, pages_per_s and
 * latency percentiles. Exit 0 only if every page came back 200 with its full body and no bound
 * was hit; 1 otherwise (and at once, with one line, if the server is not there).
 *
 * <pre>ShopLoad --port P --threads N --pages M [--keepalive] [--max-seconds 300]
 *          [--connect-timeout-ms 5000] [--expect-min-bytes 0]</pre>
 */
public final class ShopLoad extends Workload {

    ShopLoad() {
        super(List.of("port", "threads", "pages", "max-seconds", "connect-timeout-ms",
                "expect-min-bytes"), List.of("keepalive"));
    }

    public static void main(String[] args) {
        new ShopLoad().runAndExit(args);
    }

    /** The pages a shopper visits, in order; {@code %s} is filled per client and round. */
    static List<String> session(int client, int round) {
        String[][] cat = Database.CATEGORIES;
        String[] product = Database.PRODUCTS[(client * 7 + round) % Database.PRODUCTS.length];
        String item = null;
        for (String[] it : Database.ITEMS) {
            if (it[1].equals(product[0])) {
                item = it[0];
                break;
            }
        }
        return List.of("/", "/category?id=" + product[1], "/product?id=" + product[0],
                "/item?id=" + item, "/cart?add=" + item,
                "/signon?username=" + Database.USER + "&password=" + Database.PASSWORD,
                "/order/new", "/orders", "/category?id=" + cat[(client + round) % cat.length][0]);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        String host = "127.0.0.1";
        int port = (int) cli.longValue("port", -1, 1, 65535);
        if (port < 0) {
            throw new Cli.UsageException("missing required option --port");
        }
        int threads = (int) cli.longValue("threads", 10, 1, 10_000);
        int pages = (int) cli.longValue("pages", 10, 1, 10_000_000);
        boolean keepalive = cli.flag("keepalive");
        long maxSeconds = cli.longValue("max-seconds", 300, 1, 24 * 3600);
        int connectTimeout = (int) cli.longValue("connect-timeout-ms", 5000, 1, 600_000);
        long expectMin = cli.longValue("expect-min-bytes", 0, 0, Long.MAX_VALUE);
        // a server that is not there is one clear line, not N failing clients
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), connectTimeout);
        } catch (IOException e) {
            err.println("error: cannot connect to " + host + ":" + port + ": " + e.getMessage());
            return 1;
        }
        long deadline = System.nanoTime() + maxSeconds * 1_000_000_000L;
        Client[] clients = new Client[threads];
        Thread[] running = new Thread[threads];
        long t0 = System.nanoTime();
        for (int i = 0; i < threads; i++) {
            clients[i] = new Client(i, host, port, pages, keepalive, deadline, connectTimeout,
                    expectMin);
            running[i] = new Thread(clients[i], "shop-client-" + i);
            running[i].start();
        }
        for (Thread t : running) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        long elapsed = System.nanoTime() - t0;
        long done = 0;
        long conns = 0;
        long bytes = 0;
        long errors = 0;
        boolean timedOut = false;
        List<Long> lat = new ArrayList<>();
        String firstError = null;
        for (Client c : clients) {
            done += c.pagesDone;
            conns += c.connections;
            bytes += c.bytes;
            errors += c.errors;
            timedOut |= c.timedOut;
            lat.addAll(c.latencies);
            if (firstError == null) {
                firstError = c.firstError;
            }
        }
        long[] l = lat.stream().mapToLong(Long::longValue).sorted().toArray();
        out.println("{\"workload\":\"shop-load\",\"threads\":" + threads + ",\"pages_per_thread\":"
                + pages + ",\"pages\":" + done + ",\"connections\":" + conns + ",\"keepalive\":"
                + keepalive + ",\"bytes\":" + bytes + ",\"errors\":" + errors + ",\"elapsed_ns\":"
                + elapsed + ",\"pages_per_s\":" + String.format(java.util.Locale.ROOT, "%.1f",
                done / (elapsed / 1e9)) + ",\"latency_us\":{\"p50\":" + pct(l, 50) + ",\"p90\":"
                + pct(l, 90) + ",\"p99\":" + pct(l, 99) + ",\"max\":" + pct(l, 100)
                + "},\"stopped_by\":\"" + (timedOut ? "max-seconds" : "done") + "\"}");
        if (firstError != null) {
            err.println("error: " + errors + " failed pages; first: " + firstError);
        }
        if (timedOut) {
            err.println("error: --max-seconds " + maxSeconds + " reached after " + done + " of "
                    + (long) threads * pages + " pages");
        }
        return errors == 0 && !timedOut ? 0 : 1;
    }

    static long pct(long[] sorted, int p) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1000;
    }

    /** One shopper: its own session cookie, its own connection(s). */
    static final class Client implements Runnable {
        final int id;
        final String host;
        final int port;
        final int pages;
        final boolean keepalive;
        final long deadline;
        final int connectTimeout;
        final long expectMin;
        final List<Long> latencies = new ArrayList<>();
        long pagesDone;
        long connections;
        long bytes;
        long errors;
        boolean timedOut;
        String firstError;
        private String cookie;
        private Socket socket;
        private InputStream in;

        Client(int id, String host, int port, int pages, boolean keepalive, long deadline,
               int connectTimeout, long expectMin) {
            this.id = id;
            this.host = host;
            this.port = port;
            this.pages = pages;
            this.keepalive = keepalive;
            this.deadline = deadline;
            this.connectTimeout = connectTimeout;
            this.expectMin = expectMin;
        }

        @Override
        public void run() {
            try {
                for (int n = 0; n < pages; n++) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        timedOut = true;
                        return;
                    }
                    List<String> path = session(id, n / 9);
                    long a = System.nanoTime();
                    try {
                        fetch(path.get(n % path.size()), (int) Math.max(1, Math.min(left / 1_000_000, 30_000)));
                        latencies.add(System.nanoTime() - a);
                        pagesDone++;
                    } catch (SocketTimeoutException e) {
                        timedOut = System.nanoTime() >= deadline;
                        fail("timeout: " + e.getMessage());
                        close();
                    } catch (IOException e) {
                        fail(e.toString());
                        close();
                    }
                }
            } finally {
                close();
            }
        }

        private void fail(String why) {
            errors++;
            if (firstError == null) {
                firstError = "client " + id + ": " + why;
            }
        }

        private void fetch(String path, int timeoutMs) throws IOException {
            if (socket == null) {
                socket = new Socket();
                socket.connect(new InetSocketAddress(host, port), Math.min(connectTimeout, timeoutMs));
                socket.setTcpNoDelay(true);
                in = new BufferedInputStream(socket.getInputStream(), 65536);
                connections++;
            }
            socket.setSoTimeout(timeoutMs);
            StringBuilder req = new StringBuilder(256);
            req.append("GET ").append(path).append(" HTTP/1.1\r\nHost: ").append(host).append(':')
                    .append(port).append("\r\nConnection: ").append(keepalive ? "keep-alive" : "close")
                    .append("\r\n");
            if (cookie != null) {
                req.append("Cookie: ").append(cookie).append("\r\n");
            }
            req.append("\r\n");
            OutputStream o = socket.getOutputStream();
            o.write(req.toString().getBytes(StandardCharsets.US_ASCII));
            o.flush();
            String status = line(in);
            if (status == null) {
                throw new IOException("connection closed before a response to " + path);
            }
            long length = -1;
            boolean close = !keepalive;
            for (String h = line(in); h != null && !h.isEmpty(); h = line(in)) {
                int colon = h.indexOf(':');
                if (colon < 0) {
                    continue;
                }
                String name = h.substring(0, colon).trim().toLowerCase(java.util.Locale.ROOT);
                String value = h.substring(colon + 1).trim();
                switch (name) {
                    case "content-length" -> length = Long.parseLong(value);
                    case "set-cookie" -> cookie = value.split(";", 2)[0];
                    case "connection" -> close |= value.equalsIgnoreCase("close");
                    default -> { }
                }
            }
            if (length < 0) {
                throw new IOException("no Content-Length in the response to " + path);
            }
            byte[] buf = new byte[65536];
            long got = 0;
            while (got < length) {
                int r = in.read(buf, 0, (int) Math.min(buf.length, length - got));
                if (r < 0) {
                    throw new IOException("body of " + path + " cut at " + got + " of " + length + " bytes");
                }
                got += r;
            }
            bytes += got;
            if (close) {
                close();
            }
            if (!status.startsWith("HTTP/1.1 200")) {
                throw new IOException(path + ": " + status);
            }
            if (got < expectMin) {
                throw new IOException(path + ": " + got + " bytes, expected at least " + expectMin);
            }
        }

        private void close() {
            if (socket != null) {
                try {
                    socket.close();
                } catch (IOException e) {
                    // nothing to do
                }
                socket = null;
                in = null;
            }
        }

        private static String line(InputStream in) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream(128);
            int c;
            while ((c = in.read()) >= 0) {
                if (c == '\n') {
                    byte[] s = b.toByteArray();
                    int n = s.length > 0 && s[s.length - 1] == '\r' ? s.length - 1 : s.length;
                    return new String(Arrays.copyOf(s, n), StandardCharsets.US_ASCII);
                }
                b.write(c);
            }
            return b.size() == 0 ? null : b.toString(StandardCharsets.US_ASCII);
        }
    }
}
