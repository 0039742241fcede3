package org.jvmos.workloads;

import java.io.PrintStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.List;

/**
 * The paper's NoOp-threads program (section 3.2.1, Table 4): start {@code threads} threads whose
 * run() is empty, join them all, and repeat {@code repeat} times. The time that counts is
 * creating and starting the threads (constructor plus start(), measured around the loop that
 * does both); joining is timed apart.
 *
 * <p>{@code --virtual} starts virtual threads instead (JDK 21+; found by reflection so that this
 * class still compiles for Java 17): an M:N model whose threads are not native threads.
 *
 * <pre>NoOpThreads --threads 100 --repeat 20 [--warmup 5] [--virtual]</pre>
 */
public final class NoOpThreads extends Workload {

    private static final Runnable NOOP = () -> { };

    NoOpThreads() {
        super(List.of("threads", "repeat", "warmup"), List.of("virtual"));
    }

    public static void main(String[] args) {
        new NoOpThreads().runAndExitOnFailure(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        int threads = cli.intValue("threads", 100, 1, 100_000);
        int repeat = cli.intValue("repeat", 20, 1, 1_000_000);
        int warmup = cli.intValue("warmup", 5, 0, 1_000_000);
        boolean virtual = cli.flag("virtual");
        MethodHandle unstartedVirtual = null;
        if (virtual) {
            try {
                unstartedVirtual = virtualFactory();
            } catch (ReflectiveOperationException e) {
                err.println("error: --virtual needs a JDK with virtual threads (21+), this is "
                        + System.getProperty("java.version"));
                return Cli.EXIT_USAGE;
            }
        }
        // Warm-up rounds let the JIT compile Thread's Java code, as in a long-running server;
        // they are outside the measured rounds (jvmos still sees their native threads).
        Thread[] batch = new Thread[threads];
        double[] startNs = new double[repeat];
        long startTotal = 0;
        long startAll = 0;
        long joinTotal = 0;
        long t0 = System.nanoTime();
        try {
            for (int r = -warmup; r < repeat; r++) {
                long a = System.nanoTime();
                for (int i = 0; i < threads; i++) {
                    batch[i] = newThread(unstartedVirtual);
                    batch[i].start();
                }
                long b = System.nanoTime();
                for (int i = 0; i < threads; i++) {
                    batch[i].join();
                }
                long c = System.nanoTime();
                startAll += b - a;
                if (r >= 0) {
                    startNs[r] = b - a;
                    startTotal += b - a;
                    joinTotal += c - b;
                }
            }
        } catch (Throwable e) {
            err.println("error: " + e);
            return 1;
        }
        long elapsed = System.nanoTime() - t0;
        out.println(Cli.summary("noop-threads")
                .put("threads", threads)
                .put("repeat", repeat)
                .put("warmup", warmup)
                .put("virtual", virtual)
                .put("ops", (long) threads * repeat)
                .put("started_total", (long) threads * (repeat + warmup))
                .put("start_ns_total", startTotal)
                .put("start_ns_all_rounds", startAll)
                .put("join_ns_total", joinTotal)
                .put("start_ns_per_round", startNs)
                .put("elapsed_ns", elapsed)
                .put("java_version", Cli.javaVersion()));
        return 0;
    }

    private static Thread newThread(MethodHandle unstartedVirtual) throws Throwable {
        if (unstartedVirtual == null) {
            return new Thread(NOOP);
        }
        return (Thread) unstartedVirtual.invoke(NOOP);
    }

    /** Thread.ofVirtual().unstarted(Runnable), looked up at run time. */
    private static MethodHandle virtualFactory() throws ReflectiveOperationException {
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        Class<?> builderType = Class.forName("java.lang.Thread$Builder");
        MethodHandle unstarted = MethodHandles.publicLookup().findVirtual(builderType, "unstarted",
                MethodType.methodType(Thread.class, Runnable.class));
        return unstarted.bindTo(builder);
    }
}
