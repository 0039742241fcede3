package org.jvmos.workloads.shop;

import org.jvmos.workloads.Cli;
import org.jvmos.workloads.EmbeddedTomcat;
import org.jvmos.workloads.Workload;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.session.StandardManager;

/**
 * The JPetStore-style shop on embedded Apache Tomcat 10: H2 in memory behind a caching
 * persistence layer ({@link Store}), pages rendered per request ({@link ShopServlet}), bound to
 * 127.0.0.1, with a large connector thread pool as the paper configured Tomcat.
 *
 * <p>Prints {@code PORT n} once listening and writes n to {@code --port-file} (atomically);
 * stops after {@code --max-seconds} or {@code --max-requests} pages and prints one JSON line.
 *
 * <pre>ShopServer --page-bytes 65536 --max-threads 500 [--min-spare-threads 4] [--port 0] [--port-file P]
 *            [--max-seconds 600] [--max-requests 0]</pre>
 */
public final class ShopServer extends Workload {

    ShopServer() {
        super(List.of("page-bytes", "max-threads", "min-spare-threads", "port", "port-file",
                "max-seconds", "max-requests"), List.of());
    }

    public static void main(String[] args) {
        new ShopServer().runAndExit(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        int pageBytes = (int) cli.longValue("page-bytes", 65536, 0, 64 << 20);
        int maxThreads = (int) cli.longValue("max-threads", 500, 1, 10_000);
        int minSpare = (int) cli.longValue("min-spare-threads", 4, 1, 10_000);
        int port = (int) cli.longValue("port", 0, 0, 65535);
        String portFile = cli.string("port-file", "");
        long maxSeconds = cli.longValue("max-seconds", 600, 1, 7 * 24 * 3600L);
        long maxRequests = cli.longValue("max-requests", 0, 0, Long.MAX_VALUE);

        EmbeddedTomcat.logWarningsOnly();
        Path base;
        try {
            base = Files.createTempDirectory("jvmos-shop-");
        } catch (IOException e) {
            err.println("error: cannot create Tomcat's base directory: " + e.getMessage());
            return 1;
        }
        CountDownLatch limit = new CountDownLatch(1);
        try (Database db = new Database()) {
            Store store = new Store(db);
            ShopServlet servlet = new ShopServlet(store, pageBytes, maxRequests, limit::countDown);
            EmbeddedTomcat tomcat = new EmbeddedTomcat(base, port);
            try {
                int bound = start(tomcat, servlet, maxThreads, minSpare);
                EmbeddedTomcat.announce(bound, portFile, out);
                long t0 = System.nanoTime();
                boolean byLimit = limit.await(maxSeconds, TimeUnit.SECONDS);
                long elapsed = System.nanoTime() - t0;
                out.println("{\"workload\":\"shop-server\",\"requests\":" + servlet.served()
                        + ",\"bytes\":" + servlet.bytes() + ",\"page_bytes\":" + pageBytes
                        + ",\"db_queries\":" + store.queries() + ",\"stopped_by\":\""
                        + (byLimit ? "max-requests" : "max-seconds") + "\",\"port\":" + bound
                        + ",\"elapsed_ns\":" + elapsed + ",\"java_version\":\""
                        + System.getProperty("java.version") + "\"}");
                return 0;
            } finally {
                tomcat.stopQuietly(err);
            }
        } catch (SQLException | LifecycleException | IOException | RuntimeException e) {
            err.println("error: shop: " + e);
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("error: interrupted");
            return 1;
        } finally {
            EmbeddedTomcat.deleteBaseDir(base);
        }
    }

    /**
     * Starts {@code tomcat} with the shop at "/", a pool sized for the load and sessions kept in
     * memory only; returns the port it bound.
     */
    static int start(EmbeddedTomcat tomcat, ShopServlet servlet, int maxThreads, int minSpare)
            throws LifecycleException {
        tomcat.sizeForLoad(maxThreads, minSpare);
        StandardManager sessions = new StandardManager();
        sessions.setPathname(null);          // sessions are not saved to disk on stop
        tomcat.context().setManager(sessions);
        tomcat.serve("/", "shop", servlet);
        tomcat.start();
        int bound = tomcat.port();
        if (bound <= 0) {
            throw new LifecycleException("the connector did not bind");
        }
        return bound;
    }
}
