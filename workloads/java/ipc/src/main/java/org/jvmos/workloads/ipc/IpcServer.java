package org.jvmos.workloads.ipc;

import org.jvmos.workloads.Cli.Json;
import org.jvmos.workloads.GcRecord;
import org.jvmos.workloads.Cli;
import org.jvmos.workloads.ServerLifetime;
import org.jvmos.workloads.Workload;
import java.io.IOException;
import java.io.PrintStream;
import java.util.List;

/**
 * The server JVM of seed 000's benchmarks, for one primitive, on 127.0.0.1 only. Prints
 * {@code PORT n} once listening and writes n to {@code --port-file} (atomically); serves every
 * benchmark to any number of clients, one after the other or at once; stops at
 * {@code --max-seconds} or on SIGTERM/SIGINT and prints one JSON line.
 *
 * <pre>IpcServer --primitive sockets|xmlrpc|sockets-text [--port 0] [--port-file F]
 *           [--max-seconds 600] [--grab-size 100000] [--buffer 0] [--tcp-nodelay] [--backlog 50]</pre>
 */
public final class IpcServer extends Workload {

    IpcServer() {
        super(List.of("primitive", "port", "port-file", "max-seconds", "grab-size", "buffer", "backlog"),
                List.of("tcp-nodelay"));
    }

    public static void main(String[] args) {
        new IpcServer().runAndExit(args);
    }

    /** The options a socket primitive takes; for xmlrpc, giving them is a usage error. */
    static Endpoint.Options streamOptions(Cli cli, Primitive primitive, int backlog)
            throws Cli.UsageException {
        int buffer = cli.intValue("buffer", 0, 0, 64 << 20);
        boolean noDelay = cli.flag("tcp-nodelay");
        if (!primitive.socket() && (buffer != 0 || noDelay)) {
            throw new Cli.UsageException("--buffer and --tcp-nodelay apply to the socket primitives only, "
                    + "not to " + primitive.label);
        }
        return new Endpoint.Options(buffer, noDelay, backlog);
    }

    /** What carries the primitive: "apache-xmlrpc 3.1.3" or "java.net". */
    static String library(Primitive primitive) {
        return primitive == Primitive.XMLRPC ? "apache-xmlrpc " + Versions.of("xmlrpc") : "java.net";
    }

    /** Apache XML-RPC logs through commons-logging; its errors are counted here instead. */
    static void quietCommonsLogging() {
        if (System.getProperty("org.apache.commons.logging.Log") == null) {
            System.setProperty("org.apache.commons.logging.Log", "org.apache.commons.logging.impl.NoOpLog");
        }
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        Primitive primitive = Primitive.parse(cli.string("primitive", null));
        int port = cli.intValue("port", 0, 0, 65535);
        String portFile = cli.string("port-file", "");
        long maxSeconds = cli.longValue("max-seconds", 600, 1, 7 * 24 * 3600L);
        int grabSize = cli.intValue("grab-size", ServerLogic.DEFAULT_GRAB_SIZE, 1, 100_000_000);
        int backlog = cli.intValue("backlog", 50, 1, 65535);
        Endpoint.Options options = streamOptions(cli, primitive, backlog);

        long started = System.nanoTime();
        ServerLogic logic = new ServerLogic(grabSize);
        quietCommonsLogging();
        Endpoint endpoint;
        try {
            endpoint = Endpoint.start(primitive, port, logic, options);
        } catch (IOException e) {
            err.println("error: cannot listen on 127.0.0.1:" + port + " (" + primitive.label + "): "
                    + e.getMessage());
            return 1;
        }
        try (ServerLifetime life = ServerLifetime.begin("ipc")) {
            Cli.announce(endpoint.port(), portFile, out);
            boolean signalled = life.await(maxSeconds);
            endpoint.close();
            out.println(GcRecord.addTo(new Json().put("workload", "ipc-server").put("primitive", primitive.label)
                    .put("port", endpoint.port()).put("calls", logic.calls())
                    .put("failed_calls", logic.failures()).put("connections", endpoint.connections.get())
                    .put("errors", endpoint.errors.get()).put("first_error", endpoint.firstError())
                    .put("grab_size", grabSize).put("buffer", options.buffer)
                    .put("tcp_nodelay", options.tcpNoDelay).put("library", library(primitive))
                    .put("uptime_s", (System.nanoTime() - started) / 1e9, 3)
                    .put("stopped_by", signalled ? "signal" : "max-seconds")
                    .put("java_version", System.getProperty("java.version"))));
            out.flush();
            return 0;
        } catch (IOException e) {
            err.println("error: cannot write the port file " + portFile + ": " + e.getMessage());
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("error: interrupted");
            return 1;
        } finally {
            endpoint.close();
        }
    }
}
