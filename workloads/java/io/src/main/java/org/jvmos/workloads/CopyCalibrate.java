package org.jvmos.workloads;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * Calibrates the cost of copying a heap byte[] into a direct ByteBuffer, the copy that the JDK
 * performs (through a temporary direct buffer) for every socket/NIO write of heap data.
 *
 * <p>For each size: a JIT warm-up, then {@code trials} timed trials; a trial runs batches of
 * {@code direct.clear(); direct.put(heap, 0, size)} and divides the elapsed System.nanoTime by the
 * number of copies. One byte of the destination is folded into a sink after every batch (and the
 * source is changed) so the copies cannot be eliminated; the sink is printed at the end.
 *
 * <p>stdout: one line {"size":S,"ns_per_copy":[t1,...]} per size, then the summary line.
 *
 * <pre>CopyCalibrate --sizes 8,16,64,... --millis-per-size 200 [--trials 5]</pre>
 */
public final class CopyCalibrate extends Workload {

    static final int[] DEFAULT_SIZES = {8, 16, 64, 256, 1024, 4096, 16384, 65536};

    CopyCalibrate() {
        super(List.of("sizes", "millis-per-size", "trials"), List.of());
    }

    public static void main(String[] args) {
        new CopyCalibrate().runAndExitOnFailure(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        int[] sizes = cli.intList("sizes", DEFAULT_SIZES, 1, 64 << 20);
        long millisPerSize = cli.longValue("millis-per-size", 200L, 1, 3_600_000L);
        int trials = cli.intValue("trials", 5, 1, 1000);

        int max = 0;
        for (int s : sizes) {
            max = Math.max(max, s);
        }
        byte[] heap = new byte[max];
        for (int i = 0; i < max; i++) {
            heap[i] = (byte) (i * 31 + 7);
        }
        ByteBuffer direct = ByteBuffer.allocateDirect(max);

        long sink = 0;
        long totalCopies = 0;
        long totalBytes = 0;
        long tStart = System.nanoTime();
        for (int size : sizes) {
            // Warm-up: let the JIT compile the copy loop (max(100 ms, 1/4 of the budget) per size).
            long warmNs = Math.max(100_000_000L, millisPerSize * 1_000_000L / 4);
            long batch = 16;
            long wEnd = System.nanoTime() + warmNs;
            while (System.nanoTime() < wEnd) {
                sink += copies(heap, direct, size, batch);
            }
            // Pick a batch size so one batch takes ~50 us: nanoTime overhead stays negligible.
            while (true) {
                long t0 = System.nanoTime();
                sink += copies(heap, direct, size, batch);
                long dt = System.nanoTime() - t0;
                if (dt >= 50_000 || batch >= (1L << 30)) {
                    break;
                }
                batch *= 2;
            }

            long trialNs = Math.max(1L, millisPerSize * 1_000_000L / trials);
            double[] nsPerCopy = new double[trials];
            for (int t = 0; t < trials; t++) {
                long n = 0;
                long elapsed = 0;
                long trialEnd = System.nanoTime() + trialNs;
                do {
                    heap[(int) (n % size)] ^= 1; // vary the source between batches
                    long t0 = System.nanoTime();
                    sink += copies(heap, direct, size, batch);
                    elapsed += System.nanoTime() - t0;
                    n += batch;
                } while (System.nanoTime() < trialEnd);
                nsPerCopy[t] = (double) elapsed / n;
                totalCopies += n;
                totalBytes += n * size;
            }
            out.println(new Cli.Json().put("size", size).put("ns_per_copy", nsPerCopy));
        }
        long elapsed = System.nanoTime() - tStart;

        out.println(Cli.summary("copy-calibrate")
                .put("ops", totalCopies)
                .put("bytes", totalBytes)
                .put("sizes", sizes.length)
                .put("trials", trials)
                .put("sink", sink)
                .put("elapsed_ns", elapsed)
                .put("java_version", Cli.javaVersion()));
        return 0;
    }

    /** {@code count} heap-to-direct copies of {@code size} bytes; returns a value read back. */
    static long copies(byte[] heap, ByteBuffer direct, int size, long count) {
        for (long i = 0; i < count; i++) {
            direct.clear();
            direct.put(heap, 0, size);
        }
        // Observe the destination once per batch (not per copy, which would add to the timing).
        return direct.get(size - 1) + direct.position();
    }
}
