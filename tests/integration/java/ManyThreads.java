import java.io.FileOutputStream;
import java.util.concurrent.CountDownLatch;

/** Starts N threads that all wait at one latch, then each writes K arrays of 10 bytes to
 * /dev/null (one jni_GetByteArrayRegion and one write(2) each), then joins them all; prints
 * "done N K". Args: N K. A test records it to see that every thread of a JVM with thousands
 * of them is traced and that no per-thread state is lost. */
public class ManyThreads {
    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        int k = Integer.parseInt(args[1]);
        CountDownLatch go = new CountDownLatch(1);
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            ts[i] = new Thread(() -> {
                byte[] b = new byte[10];
                try {
                    go.await();
                    try (FileOutputStream out = new FileOutputStream("/dev/null")) {
                        for (int j = 0; j < k; j++) {
                            out.write(b);
                        }
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            ts[i].start();
        }
        go.countDown();
        for (Thread t : ts) {
            t.join();
        }
        System.out.println("done " + n + " " + k);
    }
}
