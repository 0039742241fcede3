package org.jvmos.workloads.shop;

import org.jvmos.workloads.Cli;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.SQLException;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.core.StandardContext;
import org.apache.catalina.session.StandardManager;
import org.apache.catalina.startup.Tomcat;

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
public final class ShopServer {

    private static final Logger APACHE_LOGGER = Logger.getLogger("org.apache");

    private ShopServer() {
    }

    public static void main(String[] args) {
        int rc = run(args, System.out, System.err);
        System.out.flush();
        System.exit(rc);
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        int pageBytes;
        int maxThreads;
        int minSpare;
        int port;
        long maxSeconds;
        long maxRequests;
        String portFile;
        try {
            Cli a = Cli.parse(args, List.of("page-bytes", "max-threads", "min-spare-threads",
                    "port", "port-file", "max-seconds", "max-requests"), List.of());
            pageBytes = (int) a.longValue("page-bytes", 65536, 0, 64 << 20);
            maxThreads = (int) a.longValue("max-threads", 500, 1, 10_000);
            minSpare = (int) a.longValue("min-spare-threads", 4, 1, 10_000);
            port = (int) a.longValue("port", 0, 0, 65535);
            portFile = a.string("port-file", "");
            maxSeconds = a.longValue("max-seconds", 600, 1, 7 * 24 * 3600L);
            maxRequests = a.longValue("max-requests", 0, 0, Long.MAX_VALUE);
        } catch (Cli.UsageException e) {
            err.println("error: " + e.getMessage());
            return Cli.EXIT_USAGE;
        }
        APACHE_LOGGER.setLevel(Level.WARNING);
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
            Tomcat tomcat = new Tomcat();
            try {
                int bound = start(tomcat, base, servlet, port, maxThreads, minSpare);
                if (!portFile.isEmpty()) {
                    Cli.writePortFile(Paths.get(portFile), bound);
                }
                out.println("PORT " + bound);
                out.flush();
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
                try {
                    tomcat.stop();
                    tomcat.destroy();
                } catch (LifecycleException | RuntimeException e) {
                    err.println("warning: tomcat shutdown: " + e);
                }
            }
        } catch (SQLException | LifecycleException | IOException | RuntimeException e) {
            err.println("error: shop: " + e);
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("error: interrupted");
            return 1;
        } finally {
            deleteTree(base);
        }
    }

    /** Starts Tomcat with the shop at "/"; returns the port it bound. */
    static int start(Tomcat tomcat, Path base, ShopServlet servlet, int port, int maxThreads,
                     int minSpare) throws LifecycleException {
        tomcat.setBaseDir(base.toString());
        tomcat.setSilent(true);
        Connector connector = new Connector("HTTP/1.1");
        connector.setPort(port);
        connector.setProperty("address", "127.0.0.1");
        connector.setProperty("maxThreads", Integer.toString(maxThreads));
        // the pool starts small and grows with the load, so that thread creation under load
        // is seen (Tomcat's default keeps 10 spare threads from the start)
        connector.setProperty("minSpareThreads", Integer.toString(Math.min(minSpare, maxThreads)));
        connector.setProperty("acceptCount", "1000");
        connector.setProperty("maxConnections", "10000");
        connector.setThrowOnFailure(true);
        tomcat.setConnector(connector);
        Context ctx = tomcat.addContext("", null);
        StandardManager sessions = new StandardManager();
        sessions.setPathname(null);          // sessions are not saved to disk on stop
        ctx.setManager(sessions);
        if (ctx instanceof StandardContext sc) {
            sc.setClearReferencesObjectStreamClassCaches(false);
            sc.setClearReferencesRmiTargets(false);
            sc.setClearReferencesThreadLocals(false);
        }
        Tomcat.addServlet(ctx, "shop", servlet);
        ctx.addServletMappingDecoded("/", "shop");
        tomcat.start();
        int bound = connector.getLocalPort();
        if (bound <= 0) {
            throw new LifecycleException("the connector did not bind");
        }
        return bound;
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> s = Files.walk(root)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind is harmless
        }
    }
}
