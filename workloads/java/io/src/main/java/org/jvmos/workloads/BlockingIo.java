package org.jvmos.workloads;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

/**
 * Unbuffered blocking writes: {@code new FileOutputStream(target).write(byte[size])} N times in a
 * tight loop. Each call is one JNI transition plus one write(2) system call; the default
 * (10-byte writes to /dev/null) isolates the per-call overhead of the JDK I/O path.
 *
 * <pre>BlockingIo --iterations N --size S --target PATH [--seconds T [--stop-file F]]</pre>
 *
 * With {@code --seconds T} the loop also ends after T seconds (checked every 65,536 writes, in a
 * loop of its own so that the untimed loop stays the one the experiments measure), or, with
 * {@code --stop-file F}, as soon as F exists (checked as often); ops says how many writes were
 * made.
 */
public final class BlockingIo extends Workload {

    BlockingIo() {
        super(List.of("iterations", "size", "target", "seconds", "stop-file"), List.of());
    }

    public static void main(String[] args) {
        new BlockingIo().runAndExitOnFailure(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        long seconds = cli.longValue("seconds", 0L, 0, 86_400L);
        long iterations = cli.longValue("iterations", 1_000_000L, 0, Long.MAX_VALUE);
        int size = cli.intValue("size", 10, 1, 64 << 20);
        String target = cli.string("target", "/dev/null");
        String stopFile = cli.string("stop-file", "");
        java.io.File stop = stopFile.isEmpty() ? null : new java.io.File(stopFile);

        byte[] buf = new byte[size];
        Arrays.fill(buf, (byte) 'x');
        long elapsed;
        long start;
        try (FileOutputStream fos = new FileOutputStream(target)) {
            long t0 = System.nanoTime();
            start = t0;
            if (seconds == 0) {
                for (long i = 0; i < iterations; i++) {
                    fos.write(buf);
                }
            } else {
                long deadline = t0 + seconds * 1_000_000_000L;
                long i = 0;
                for (; i < iterations; i++) {
                    if ((i & 0xFFFF) == 0
                            && (System.nanoTime() > deadline || (stop != null && stop.exists()))) {
                        break;
                    }
                    fos.write(buf);
                }
                iterations = i;
            }
            elapsed = System.nanoTime() - t0;
        } catch (IOException e) {
            err.println("error: " + target + ": " + e.getMessage());
            return 1;
        }

        out.println(Cli.summary("blocking-io")
                .put("ops", iterations)
                .put("bytes", iterations * size)
                .put("size", size)
                .put("target", target)
                .put("elapsed_ns", elapsed)
                // System.nanoTime is CLOCK_MONOTONIC on Linux: comparable with other processes'
                .put("loop_start_ns", start)
                .put("loop_end_ns", start + elapsed)
                .put("ns_per_op", iterations == 0 ? 0.0 : (double) elapsed / iterations)
                .put("java_version", Cli.javaVersion()));
        return 0;
    }
}
