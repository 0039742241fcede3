package org.jvmos.workloads;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A fixed CPU-bound loop run on command, for measuring what a CPU sampler (async-profiler)
 * costs the JVM it samples (jvmos calibrate --sampler). The loop runs at the bottom of
 * {@code --depth} nested Java calls, so that each sample has a stack of that many frames to walk
 * (the JIT inlines some of them: the frames a sampler sees are Java frames, inlined or not).
 *
 * <p>The driver writes one command per line on stdin: {@code run N} runs N units of work (a unit
 * is 2^16 steps of a xorshift over a 4 KiB table) on the main thread and answers one JSON line
 * (units, elapsed_ns, thread_cpu_ns of the main thread); {@code quit} or end of input ends the
 * program with its summary. The first line out is {@code {"ready":true,...}}, after a warm-up
 * that lets the JIT compile the loop. Bounded: it exits after {@code --max-seconds} or
 * {@code --max-units} units, whichever comes first.
 *
 * <pre>SamplerLoad --depth 64 [--warmup-units 200] [--max-units 1000000] [--max-seconds 900]</pre>
 */
public final class SamplerLoad extends Workload {

    static final int STEPS_PER_UNIT = 1 << 16;
    private static volatile long sink;

    SamplerLoad() {
        super(List.of("depth", "warmup-units", "max-units", "max-seconds"), List.of());
    }

    public static void main(String[] args) {
        new SamplerLoad().runAndExitOnFailure(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        int depth = cli.intValue("depth", 64, 0, 2000);
        long warmup = cli.longValue("warmup-units", 200, 0, 1_000_000_000L);
        long maxUnits = cli.longValue("max-units", 1_000_000, 1, Long.MAX_VALUE);
        long maxSeconds = cli.longValue("max-seconds", 900, 1, 86_400);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long t0 = System.nanoTime();
        long deadline = t0 + maxSeconds * 1_000_000_000L;
        int[] table = new int[1024];
        for (int i = 0; i < table.length; i++) {
            table[i] = i * 0x9E3779B9;
        }
        sink = descend(depth, warmup, table);
        out.println(new Cli.Json().put("ready", true).put("depth", depth)
                .put("steps_per_unit", STEPS_PER_UNIT).put("java_version", Cli.javaVersion()));
        out.flush();
        long done = 0;
        int segments = 0;
        String stoppedBy = "quit";
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            for (String line; (line = in.readLine()) != null; ) {
                line = line.trim();
                if (line.equals("quit")) {
                    break;
                }
                if (!line.startsWith("run ")) {
                    err.println("error: unknown command '" + line + "' (run N | quit)");
                    return Cli.EXIT_USAGE;
                }
                long n;
                try {
                    n = Long.parseLong(line.substring(4).trim());
                } catch (NumberFormatException e) {
                    err.println("error: bad unit count in '" + line + "'");
                    return Cli.EXIT_USAGE;
                }
                if (n < 1 || done + n > maxUnits || System.nanoTime() > deadline) {
                    stoppedBy = n < 1 ? "bad-count" : done + n > maxUnits ? "max-units" : "max-seconds";
                    break;
                }
                long c0 = mx.getCurrentThreadCpuTime();
                long a = System.nanoTime();
                sink = descend(depth, n, table);
                long b = System.nanoTime();
                long c1 = mx.getCurrentThreadCpuTime();
                done += n;
                segments++;
                out.println(new Cli.Json().put("units", n).put("elapsed_ns", b - a)
                        .put("thread_cpu_ns", c1 - c0));
                out.flush();
            }
        } catch (IOException e) {
            err.println("error: " + e);
            return 1;
        }
        out.println(Cli.summary("sampler-load")
                .put("depth", depth)
                .put("ops", done)
                .put("segments", segments)
                .put("stopped_by", stoppedBy)
                .put("elapsed_ns", System.nanoTime() - t0)
                .put("java_version", Cli.javaVersion()));
        return 0;
    }

    /** depth nested calls, then the loop: each frame keeps a value live so none is a tail call. */
    static long descend(int depth, long units, int[] table) {
        if (depth <= 0) {
            return work(units, table);
        }
        long r = descend(depth - 1, units, table);
        return r ^ depth;
    }

    static long work(long units, int[] table) {
        long x = 0x2545F4914F6CDD1DL;
        long acc = 0;
        for (long u = 0; u < units; u++) {
            for (int s = 0; s < STEPS_PER_UNIT; s++) {
                x ^= x << 13;
                x ^= x >>> 7;
                x ^= x << 17;
                int i = (int) (x & 1023);
                table[i] += (int) acc;
                acc += table[(i + 17) & 1023];
            }
        }
        return acc;
    }
}
