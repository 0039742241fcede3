import java.io.RandomAccessFile;

/** A JVM with a steady, paced load for the agent's tests: every 10 ms it writes WRITES arrays
 * of SIZE bytes to FILE with RandomAccessFile.write(byte[]) (each one JNI copy of the array and
 * one write(2); the file is rewound every tick, so it never grows past WRITES x SIZE bytes) and
 * spins SPIN_US microseconds on the CPU, then sleeps until the next tick. With BURST_S > 0 it
 * first writes in a tight loop for BURST_S seconds (as many probe hits per CPU second as it
 * can make). Exits after SECONDS in all; prints "paced" once the paced phase begins, and at
 * the end "done N NS": the writes of the paced phase and its length in ns (a steady rate the
 * agent's windows can be checked against).
 * Args: FILE SECONDS SIZE WRITES SPIN_US [BURST_S]. */
public class PacedWrites {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        String file = args[0];
        long end = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L;
        byte[] b = new byte[Integer.parseInt(args[2])];
        int writes = Integer.parseInt(args[3]);
        long spinNs = Long.parseLong(args[4]) * 1_000L;
        long burstEnd = System.nanoTime()
                + (args.length > 5 ? Long.parseLong(args[5]) * 1_000_000_000L : 0L);
        try (RandomAccessFile out = new RandomAccessFile(file, "rw")) {
            for (int i = 0; System.nanoTime() < burstEnd && System.nanoTime() < end; i++) {
                if ((i & 255) == 0) {
                    out.seek(0);
                }
                out.write(b);
            }
            System.out.println("paced");
            System.out.flush();
            long tick = System.nanoTime();
            long start = tick;
            long done = 0;
            while (tick < end) {
                out.seek(0);
                for (int i = 0; i < writes; i++) {
                    out.write(b);
                }
                done += writes;
                long spinEnd = System.nanoTime() + spinNs;
                long x = 0;
                while (System.nanoTime() < spinEnd) {
                    x += x * 31 + 7;
                }
                sink = x;
                tick += 10_000_000L;
                long wait = tick - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
                }
            }
            System.out.println("done " + done + " " + (System.nanoTime() - start));
        }
    }
}
