package org.jvmos.workloads.dacapo;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs one task per worker on fresh platform threads and rethrows the first failure.
 * Fresh threads per iteration, as DaCapo's multi-threaded benchmarks do: thread start/exit is part
 * of what the OS costs the JVM.
 */
final class Workers {
    /** The work of worker {@code index} out of {@code count}. */
    interface Task {
        void run(int index, int count) throws Exception;
    }

    private Workers() {
    }

    static void run(String name, int count, Task task) throws Exception {
        if (count == 1) {
            task.run(0, 1);
            return;
        }
        AtomicInteger ids = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(count,
                r -> new Thread(r, "jvmos-dacapo-" + name + "-" + ids.getAndIncrement()));
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                final int index = i;
                futures.add(pool.submit(() -> {
                    task.run(index, count);
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                try {
                    f.get();
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    if (cause instanceof Exception) {
                        throw (Exception) cause;
                    }
                    if (cause instanceof Error) {
                        throw (Error) cause;
                    }
                    throw e;
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
