package org.jvmos.workloads;

import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Random;

/**
 * Random positioned reads and writes on a 1 MiB file through RandomAccessFile ("rw"). Each
 * operation seeks to an offset that is a multiple of {@code size} in [0, 1 MiB - size], chosen
 * by java.util.Random(seed), then reads or writes {@code size} bytes (50/50). Deterministic for
 * a given seed.
 *
 * <pre>RandomRw --ops N --size S --file PATH --seed K [--keep]</pre>
 */
public final class RandomRw extends Workload {

    static final int FILE_SIZE = 1 << 20;

    RandomRw() {
        super(List.of("ops", "size", "file", "seed"), List.of("keep"));
    }

    public static void main(String[] args) {
        new RandomRw().runAndExitOnFailure(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        long ops = cli.longValue("ops", 100_000L, 0, Long.MAX_VALUE / FILE_SIZE);
        int size = cli.intValue("size", 4096, 1, FILE_SIZE);
        String file = cli.string("file", null);
        long seed = cli.longValue("seed", 42L, Long.MIN_VALUE, Long.MAX_VALUE);
        boolean keep = cli.flag("keep");

        Path path = Paths.get(file);
        Random rnd = new Random(seed);
        byte[] writeBuf = new byte[size];
        rnd.nextBytes(writeBuf);
        byte[] readBuf = new byte[size];
        int slots = (FILE_SIZE - size) / size + 1; // aligned offsets k*size <= FILE_SIZE - size
        long reads = 0;
        long writes = 0;
        long checksum = 0;
        long elapsed;
        try {
            try (RandomAccessFile raf = new RandomAccessFile(path.toFile(), "rw")) {
                raf.setLength(FILE_SIZE);
                long t0 = System.nanoTime();
                for (long i = 0; i < ops; i++) {
                    long offset = (long) rnd.nextInt(slots) * size;
                    raf.seek(offset);
                    if (rnd.nextBoolean()) {
                        raf.readFully(readBuf);
                        checksum += readBuf[(int) (i % size)];
                        reads++;
                    } else {
                        writeBuf[0] = (byte) i;
                        raf.write(writeBuf);
                        writes++;
                    }
                }
                elapsed = System.nanoTime() - t0;
            }
        } catch (IOException e) {
            err.println("error: " + file + ": " + e.getMessage());
            return 1;
        } finally {
            if (!keep) {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException e) {
                    err.println("warning: could not delete " + file + ": " + e.getMessage());
                }
            }
        }

        out.println(Cli.summary("random-rw")
                .put("ops", ops)
                .put("reads", reads)
                .put("writes", writes)
                .put("bytes", ops * size)
                .put("size", size)
                .put("file", file)
                .put("seed", seed)
                .put("checksum", checksum)
                .put("elapsed_ns", elapsed)
                .put("ns_per_op", ops == 0 ? 0.0 : (double) elapsed / ops)
                .put("java_version", Cli.javaVersion()));
        return 0;
    }
}
