package org.jvmos.workloads;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.catalina.LifecycleException;

/**
 * Embedded Apache Tomcat serving one deterministic text/html page of exactly {@code page-bytes}
 * bytes at {@code /page} (and "ok" at {@code /health}), bound to 127.0.0.1 on an ephemeral port.
 * No JSP, no access log, no webapp deployment.
 *
 * <p>After start-up the bound port is written to PATH (via PATH.tmp and a rename) and printed as
 * {@code PORT <n>}. The server stops cleanly after {@code max-requests} successful /page
 * responses (0 = no limit) or after {@code max-seconds}, whichever comes first, and exits 0 either
 * way; requests beyond the limit get 503. The last stdout line is a JSON summary.
 *
 * <pre>TomcatServe --page-bytes 10240 --max-requests N --max-seconds T [--port-file PATH]</pre>
 */
public final class TomcatServe extends Workload {

    TomcatServe() {
        super(List.of("page-bytes", "max-requests", "max-seconds", "port-file"), List.of());
    }

    public static void main(String[] args) {
        new TomcatServe().runAndExit(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        int pageBytes = cli.intValue("page-bytes", 10240, 1, 64 << 20);
        long maxRequests = cli.longValue("max-requests", 1000L, 0, Long.MAX_VALUE);
        long maxSeconds = cli.longValue("max-seconds", 60L, 1, 7 * 24 * 3600L);
        String portFile = cli.string("port-file", "");

        EmbeddedTomcat.logWarningsOnly();
        byte[] page = makePage(pageBytes);
        PageServlet servlet = new PageServlet(page, maxRequests);

        Path baseDir;
        try {
            baseDir = Files.createTempDirectory("jvmos-tomcat-");
        } catch (IOException e) {
            err.println("error: cannot create Tomcat base directory: " + e.getMessage());
            return 1;
        }
        EmbeddedTomcat tomcat = null;
        boolean started = false;
        try {
            tomcat = new EmbeddedTomcat(baseDir, 0);
            tomcat.serve("/page", "page", servlet);
            tomcat.serve("/health", "health", new HealthServlet());

            tomcat.start();
            started = true;
            int port = tomcat.port();
            if (port <= 0) {
                err.println("error: Tomcat connector did not bind");
                return 1;
            }
            EmbeddedTomcat.announce(port, portFile, out);

            long t0 = System.nanoTime();
            boolean reachedMax = servlet.done.await(maxSeconds, TimeUnit.SECONDS);
            long elapsed = System.nanoTime() - t0;
            long served = servlet.served.get();

            tomcat.stop();
            started = false;

            if (!reachedMax) {
                err.println("tomcat: max-seconds " + maxSeconds + " reached, served " + served + " requests");
            }
            out.println(Cli.summary("tomcat")
                    .put("requests", served)
                    .put("bytes", served * pageBytes)
                    .put("page_bytes", pageBytes)
                    .put("stopped_by", reachedMax ? "max-requests" : "max-seconds")
                    .put("port", port)
                    .put("elapsed_ns", elapsed)
                    .put("java_version", Cli.javaVersion()));
            return 0;
        } catch (LifecycleException | IOException | RuntimeException e) {
            err.println("error: tomcat: " + e);
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("error: interrupted");
            return 1;
        } finally {
            if (started) {
                tomcat.stopQuietly(err);
            }
            EmbeddedTomcat.deleteBaseDir(baseDir);
        }
    }

    /** A deterministic ASCII HTML page of exactly {@code n} bytes. */
    static byte[] makePage(int n) {
        String head = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>jvmos page</title></head>\n<body>\n";
        String tail = "</body></html>\n";
        StringBuilder sb = new StringBuilder(n);
        if (n < head.length() + tail.length()) {
            // Too small for a document: a fragment of repeated letters.
            for (int i = 0; i < n; i++) {
                sb.append((char) ('a' + i % 26));
            }
        } else {
            sb.append(head);
            int room = n - tail.length();
            for (int line = 0; ; line++) {
                String p = "<p>" + line + ": The quick brown fox jumps over the lazy dog. 0123456789</p>\n";
                if (sb.length() + p.length() > room) {
                    break;
                }
                sb.append(p);
            }
            while (sb.length() < room - 1) {
                sb.append(' ');
            }
            if (sb.length() < room) {
                sb.append('\n');
            }
            sb.append(tail);
        }
        byte[] bytes = sb.toString().getBytes(StandardCharsets.US_ASCII);
        if (bytes.length != n) {
            throw new IllegalStateException("page is " + bytes.length + " bytes, wanted " + n);
        }
        return bytes;
    }

    /** Serves the fixed page and counts completed responses. */
    static final class PageServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;

        private final transient byte[] page;
        private final long maxRequests;
        final transient AtomicLong issued = new AtomicLong();
        final transient AtomicLong served = new AtomicLong();
        final transient CountDownLatch done = new CountDownLatch(1);

        PageServlet(byte[] page, long maxRequests) {
            this.page = page;
            this.maxRequests = maxRequests;
        }

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            long ticket = issued.incrementAndGet();
            if (maxRequests > 0 && ticket > maxRequests) {
                resp.setStatus(HttpServletResponse.SC_SERVICE_UNAVAILABLE);
                resp.setHeader("Connection", "close");
                resp.setContentLength(0);
                return;
            }
            resp.setStatus(HttpServletResponse.SC_OK);
            resp.setContentType("text/html;charset=utf-8");
            resp.setContentLength(page.length);
            try {
                resp.getOutputStream().write(page);
                resp.flushBuffer(); // the whole response is on the wire before it is counted
            } catch (IOException e) {
                issued.decrementAndGet(); // client went away: this one does not count
                throw e;
            }
            long n = served.incrementAndGet();
            if (maxRequests > 0 && n == maxRequests) {
                done.countDown();
            }
        }

        @Override
        protected void doHead(HttpServletRequest req, HttpServletResponse resp) {
            resp.setContentType("text/html;charset=utf-8");
            resp.setContentLength(page.length);
        }
    }

    /** Liveness probe; not counted. */
    static final class HealthServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private static final byte[] OK = "ok\n".getBytes(StandardCharsets.US_ASCII);

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            resp.setContentType("text/plain;charset=utf-8");
            resp.setContentLength(OK.length);
            resp.getOutputStream().write(OK);
        }
    }
}
