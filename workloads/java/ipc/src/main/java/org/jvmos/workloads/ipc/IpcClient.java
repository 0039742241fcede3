package org.jvmos.workloads.ipc;

import org.jvmos.workloads.Cli.Json;
import org.jvmos.workloads.GcRecord;
import org.jvmos.workloads.Cli;
import org.jvmos.workloads.Workload;
import java.io.IOException;
import java.io.PrintStream;
import java.net.SocketTimeoutException;
import java.util.List;

/**
 * The client JVM of seed 000's benchmarks: one trial of one benchmark with one primitive.
 * Connects to the server on 127.0.0.1, makes {@code --calls} calls, validates every answer
 * against the one it works out itself, disconnects, and prints one JSON line with the
 * language-level times ({@code System.nanoTime}); the OS-level time (the process's wall time)
 * is the driver's to take.
 *
 * <pre>IpcClient --primitive sockets|xmlrpc|sockets-text --port P --benchmark SS|SV|VS|VV|GRAB|FACT|GCD|REV
 *           [--size 5] [--calls 100] [--max-seconds 300] [--seed 1] [--grab-size 100000]
 *           [--per-call] [--buffer 0] [--tcp-nodelay] [--connect-timeout-ms 5000]</pre>
 *
 * <p>Exit 0 when every call was answered correctly; 1 (one {@code error:} line, no JSON) when
 * the server cannot be reached, fails a call, answers wrongly, or the time bound is reached;
 * 2 for bad usage.
 */
public final class IpcClient extends Workload {

    /** Calls per trial unless --calls says otherwise (seed 000 does not state its count). */
    static final int DEFAULT_CALLS = 100;

    IpcClient() {
        super(List.of("primitive", "port", "port-file", "benchmark", "size", "calls", "max-seconds", "seed",
                "grab-size", "buffer", "connect-timeout-ms"), List.of("per-call", "tcp-nodelay"));
    }

    public static void main(String[] args) {
        new IpcClient().runAndExit(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        Primitive primitive = Primitive.parse(cli.string("primitive", null));
        int port = (int) cli.longValue("port", -1, 1, 65535);
        String portFile = cli.string("port-file", "");
        portFile = portFile.isEmpty() ? null : portFile;
        if ((port < 0) == (portFile == null)) {
            throw new Cli.UsageException("give one of --port and --port-file");
        }
        Benchmark b = Benchmark.parse(cli.string("benchmark", null));
        int size = cli.intValue("size", 5, 1, ServerLogic.MAX_VECTOR);
        int calls = cli.intValue("calls", DEFAULT_CALLS, 1, 10_000_000);
        long maxSeconds = cli.longValue("max-seconds", 300, 1, 86_400);
        long seed = cli.longValue("seed", 1, Long.MIN_VALUE, Long.MAX_VALUE);
        int grabSize = cli.intValue("grab-size", ServerLogic.DEFAULT_GRAB_SIZE, 1, 100_000_000);
        int connectTimeout = cli.intValue("connect-timeout-ms", 5000, 1, 600_000);
        boolean perCall = cli.flag("per-call");
        Endpoint.Options options = IpcServer.streamOptions(cli, primitive, 1);

        long start = System.nanoTime();
        if (portFile != null) {
            // the server's port, once it has written it: waited for here, so that a script
            // that starts both JVMs needs no polling processes of its own (every process in a
            // traced tree is probed)
            port = awaitPort(java.nio.file.Path.of(portFile), start + maxSeconds * 1_000_000_000L);
            if (port < 0) {
                err.println("error: no port in " + portFile + " within " + maxSeconds + " s");
                return 1;
            }
        }
        Channel.Target target = new Channel.Target(port, connectTimeout, start + maxSeconds * 1_000_000_000L,
                options.buffer, options.tcpNoDelay);
        Expect expect = Expect.inputs(b, size, calls, seed, grabSize);
        long[] callNs = new long[calls];
        String where = "127.0.0.1:" + port;

        long opened = System.nanoTime();
        Channel channel;
        try {
            channel = Channel.open(primitive, target);
        } catch (IOException e) {
            err.println("error: cannot connect to " + where + ": " + e.getMessage());
            return 1;
        }
        long connected = System.nanoTime();
        long callsNs = 0;
        long ended;
        int k = 0;
        try {
            Object vector = expect.vector != null ? channel.vector(expect.vector) : null;
            for (; k < calls; k++) {
                if (System.nanoTime() - target.deadline > 0) {
                    err.println("error: --max-seconds " + maxSeconds + " reached after " + k + " of "
                            + calls + " calls of " + b.name());
                    return 1;
                }
                Object argument = vector != null ? vector : Integer.valueOf(expect.values[k]);
                long t0 = System.nanoTime();
                Object answer = channel.call(b, argument);
                long t1 = System.nanoTime();
                callNs[k] = t1 - t0;
                callsNs += t1 - t0;
                String wrong = Expect.compare(expect.answer(k), answer);
                if (wrong != null) {
                    err.println("error: wrong answer to call " + (k + 1) + " of " + calls + " of " + b.name()
                            + " (" + primitive.label + ", size " + size + "): " + wrong);
                    return 1;
                }
            }
            ended = System.nanoTime();
        } catch (Channel.ConnectFailure e) {
            err.println("error: cannot connect to " + where + ": " + e.getMessage() + " (call " + (k + 1)
                    + " of " + calls + ")");
            return 1;
        } catch (SocketTimeoutException e) {
            err.println("error: --max-seconds " + maxSeconds + " reached during call " + (k + 1) + " of "
                    + calls + " of " + b.name() + " (" + e.getMessage() + ")");
            return 1;
        } catch (IOException e) {
            err.println("error: lost the connection to " + where + " during call " + (k + 1) + " of "
                    + calls + " of " + b.name() + ": " + e);
            return 1;
        } catch (Channel.ServerError e) {
            err.println("error: the server failed call " + (k + 1) + " of " + calls + " of " + b.name()
                    + ": " + e.getMessage());
            return 1;
        } finally {
            channel.close();
        }

        Json json = new Json().put("workload", "ipc-client").put("primitive", primitive.label)
                .put("benchmark", b.name()).put("kind", b.kind).put("type", b.type)
                .put("size", size).put("size_used", b.usesSize()).put("calls", calls)
                .put("validated", calls).put("language_ns", callsNs)
                .put("language_incl_connect_ns", ended - opened).put("connect_ns", connected - opened)
                .put("first_call_ns", callNs[0]).put("bytes_sent_app", channel.bytesSent())
                .put("bytes_received_app", channel.bytesReceived()).put("seed", seed)
                .put("buffer", options.buffer).put("tcp_nodelay", options.tcpNoDelay)
                .put("library", IpcServer.library(primitive)).put("java_version", System.getProperty("java.version"));
        GcRecord.addTo(json);
        if (perCall) {
            json.put("per_call_ns", callNs);
        }
        out.println(json);
        out.flush();
        return 0;
    }

    /** The port a server wrote to {@code file} (polled every 20 ms), or -1 at the deadline. */
    static int awaitPort(java.nio.file.Path file, long deadlineNs) {
        while (System.nanoTime() < deadlineNs) {
            try {
                String text = java.nio.file.Files.readString(file).trim();
                if (!text.isEmpty()) {
                    int p = Integer.parseInt(text);
                    if (p > 0 && p < 65536) {
                        return p;
                    }
                }
            } catch (java.io.IOException | NumberFormatException e) {
                // not written yet (the server writes it atomically: a rename)
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return -1;
            }
        }
        return -1;
    }
}
