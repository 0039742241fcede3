import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.atomic.AtomicLong;

/** Starts N threads that each spin until they have used MS ms of their own CPU, then exit;
 * prints the CPU the threads measured on themselves, then sleeps (args: N MS SLEEP_MS). */
public class BurnThreads {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        long budget = Long.parseLong(args[1]) * 1_000_000L;
        long sleepMs = Long.parseLong(args[2]);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        AtomicLong burned = new AtomicLong();
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            ts[i] = new Thread(() -> {
                long x = 0;
                long used;
                do {
                    for (int k = 0; k < 100_000; k++) x = x * 31 + k;
                    used = mx.getCurrentThreadCpuTime();
                } while (used < budget);
                sink = x;
                burned.addAndGet(used);
            });
            ts[i].start();
        }
        for (Thread t : ts) t.join();
        System.out.println("{\"threads\": " + n + ", \"burned_ns\": " + burned.get() + "}");
        System.out.flush();
        Thread.sleep(sleepMs);
    }
}
