package org.jvmos.workloads;

import jakarta.servlet.http.HttpServlet;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Comparator;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.core.StandardContext;
import org.apache.catalina.startup.Tomcat;

/**
 * The embedded Apache Tomcat that both web workloads run on (TomcatServe and the shop's
 * ShopServer): one HTTP/1.1 connector bound to 127.0.0.1 only, and one root context with the
 * callers' servlets (no JSP, no access log, no webapp deployment).
 *
 * <p>The steps stay separate calls (configure, add servlets, start, announce, stop) because the
 * two programs do them at different points of their runs: TomcatServe stops Tomcat before
 * printing its summary, the shop after it.
 */
public final class EmbeddedTomcat {

    /** Strong reference: java.util.logging only keeps weak references to configured loggers. */
    private static final Logger APACHE_LOGGER = Logger.getLogger("org.apache");

    private final Tomcat tomcat = new Tomcat();
    private final Connector connector;
    private final Context context;

    /**
     * A Tomcat configured but not started: work files under {@code baseDir}, a connector on
     * 127.0.0.1:{@code port} (0 = an ephemeral port) and an empty root context.
     */
    public EmbeddedTomcat(Path baseDir, int port) {
        tomcat.setBaseDir(baseDir.toString());
        tomcat.setSilent(true);
        connector = new Connector("HTTP/1.1");
        connector.setPort(port);
        // loopback only: the load comes from this machine, and nothing else may reach the server
        connector.setProperty("address", "127.0.0.1");
        // a port that cannot be bound fails start() instead of being logged and ignored
        connector.setThrowOnFailure(true);
        tomcat.setConnector(connector);

        context = tomcat.addContext("", null);
        if (context instanceof StandardContext sc) {
            // One short-lived context per JVM: the leak detectors on stop only print warnings
            // that need --add-opens, so switch them off.
            sc.setClearReferencesObjectStreamClassCaches(false);
            sc.setClearReferencesRmiTargets(false);
            sc.setClearReferencesThreadLocals(false);
        }
    }

    /** Tomcat logs through java.util.logging: only its warnings and errors reach stderr. */
    public static void logWarningsOnly() {
        APACHE_LOGGER.setLevel(Level.WARNING);
    }

    /**
     * Sizes the connector for many concurrent clients, as the paper configured Tomcat: up to
     * {@code maxThreads} request threads, a backlog of 1000 and up to 10000 connections.
     * Without this call Tomcat's defaults apply.
     */
    public void sizeForLoad(int maxThreads, int minSpareThreads) {
        connector.setProperty("maxThreads", Integer.toString(maxThreads));
        // the pool starts small and grows with the load, so that thread creation under load
        // is seen (Tomcat's default keeps 10 spare threads from the start)
        connector.setProperty("minSpareThreads", Integer.toString(Math.min(minSpareThreads, maxThreads)));
        connector.setProperty("acceptCount", "1000");
        connector.setProperty("maxConnections", "10000");
    }

    /** The root context, for settings of the caller's own (sessions, ...). */
    public Context context() {
        return context;
    }

    /** Maps {@code path} (a servlet URL pattern) to {@code servlet}, registered as {@code name}. */
    public void serve(String path, String name, HttpServlet servlet) {
        Tomcat.addServlet(context, name, servlet);
        context.addServletMappingDecoded(path, name);
    }

    public void start() throws LifecycleException {
        tomcat.start();
    }

    /** The port the connector is listening on once started (0 or less if it did not bind). */
    public int port() {
        return connector.getLocalPort();
    }

    /**
     * Tells the waiting load generator that the server listens: the port goes to
     * {@code portFile} (unless empty; written atomically) and then to {@code out} as
     * {@code PORT n}, flushed at once since stdout may be a pipe.
     */
    public static void announce(int port, String portFile, PrintStream out) throws IOException {
        Cli.announce(port, portFile, out);
    }

    public void stop() throws LifecycleException {
        tomcat.stop();
        tomcat.destroy();
    }

    /** {@link #stop()} on a way out, where a failure is only worth a warning. */
    public void stopQuietly(PrintStream err) {
        try {
            stop();
        } catch (LifecycleException | RuntimeException e) {
            err.println("warning: tomcat shutdown: " + e);
        }
    }

    /** Deletes Tomcat's base directory and its work files, as far as possible. */
    public static void deleteBaseDir(Path root) {
        if (root == null || !Files.exists(root)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    // best effort: a temporary directory left behind is harmless
                }
            });
        } catch (IOException e) {
            // best effort
        }
    }
}
