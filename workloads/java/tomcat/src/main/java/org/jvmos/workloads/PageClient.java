package org.jvmos.workloads;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.util.List;

/**
 * Small bounded HTTP client for testing TomcatServe: {@code requests} sequential GETs of
 * http://127.0.0.1:PORT/page, a new HttpURLConnection per request (the JDK may still reuse the
 * TCP connection via keep-alive unless {@code --close}), each body read fully and its length
 * checked against Content-Length (and {@code --expect-bytes} if given). Stops at the first
 * transport error or when {@code max-seconds} have passed.
 *
 * <p>Exit 0 only if all requests succeeded; 1 otherwise. Last stdout line: JSON summary.
 *
 * <pre>PageClient --port P --requests N --max-seconds T [--path /page] [--expect-bytes B] [--close]</pre>
 */
public final class PageClient extends Workload {

    PageClient() {
        super(List.of("port", "requests", "max-seconds", "path", "expect-bytes"), List.of("close"));
    }

    public static void main(String[] args) {
        new PageClient().runAndExit(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        int port = (int) cli.longValue("port", -1, 1, 65535);
        if (port < 0) {
            throw new Cli.UsageException("missing required option --port");
        }
        long requests = cli.longValue("requests", 100L, 0, Long.MAX_VALUE);
        long maxSeconds = cli.longValue("max-seconds", 30L, 1, 7 * 24 * 3600L);
        String path = cli.string("path", "/page");
        if (!path.startsWith("/")) {
            throw new Cli.UsageException("--path must start with '/'");
        }
        long expectBytes = cli.longValue("expect-bytes", -1L, 0, Long.MAX_VALUE);
        boolean close = cli.flag("close");

        URL url;
        try {
            url = URI.create("http://127.0.0.1:" + port + path).toURL();
        } catch (IOException | IllegalArgumentException e) {
            err.println("error: bad URL: " + e.getMessage());
            return Cli.EXIT_USAGE;
        }

        byte[] buf = new byte[64 * 1024];
        long ok = 0;
        long errors = 0;
        long bytes = 0;
        boolean timedOut = false;
        long t0 = System.nanoTime();
        long deadline = t0 + maxSeconds * 1_000_000_000L;
        for (long i = 0; i < requests; i++) {
            long remainingMs = (deadline - System.nanoTime()) / 1_000_000L;
            if (remainingMs <= 0) {
                timedOut = true;
                break;
            }
            int timeout = (int) Math.max(1, Math.min(remainingMs, 30_000L));
            HttpURLConnection c = null;
            try {
                c = (HttpURLConnection) url.openConnection();
                c.setConnectTimeout(timeout);
                c.setReadTimeout(timeout);
                c.setUseCaches(false);
                if (close) {
                    c.setRequestProperty("Connection", "close");
                }
                int code = c.getResponseCode();
                long contentLength = c.getContentLengthLong();
                long got = 0;
                InputStream in = code >= 400 ? c.getErrorStream() : c.getInputStream();
                if (in != null) {
                    try (InputStream is = in) {
                        int n;
                        while ((n = is.read(buf)) != -1) {
                            got += n;
                        }
                    }
                }
                String problem = null;
                if (code != 200) {
                    problem = "HTTP " + code;
                } else if (contentLength < 0) {
                    problem = "no Content-Length";
                } else if (got != contentLength) {
                    problem = "body " + got + " bytes, Content-Length " + contentLength;
                } else if (expectBytes >= 0 && got != expectBytes) {
                    problem = "body " + got + " bytes, expected " + expectBytes;
                }
                if (problem == null) {
                    ok++;
                    bytes += got;
                } else {
                    errors++;
                    if (errors <= 5) {
                        err.println("page-client: request " + i + ": " + problem);
                    }
                }
            } catch (IOException e) {
                errors++;
                err.println("page-client: request " + i + ": " + e);
                break;
            } finally {
                if (close && c != null) {
                    c.disconnect();
                }
            }
        }
        long elapsed = System.nanoTime() - t0;

        out.println(Cli.summary("page-client")
                .put("requests", ok)
                .put("errors", errors)
                .put("bytes", bytes)
                .put("timed_out", timedOut)
                .put("elapsed_ns", elapsed)
                .put("java_version", Cli.javaVersion()));
        return (errors == 0 && ok == requests) ? 0 : 1;
    }
}
