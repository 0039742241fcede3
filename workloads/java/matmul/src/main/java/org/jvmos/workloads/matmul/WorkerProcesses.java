package org.jvmos.workloads.matmul;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The k worker JVMs, spawned by the manager with its own java binary and class path. Each
 * worker prints "PORT p" on stdout once its endpoint is open; its stdout and stderr are read by
 * daemon threads (stderr kept, for the manager's error line). {@link #close} kills those still
 * alive; a shutdown hook does the same if the manager is killed.
 */
final class WorkerProcesses implements AutoCloseable {
    private final List<Process> processes = new ArrayList<>();
    private final int[] ports;
    private final String[] lastErr;
    private final Thread hook;

    WorkerProcesses(int k) {
        ports = new int[k];
        lastErr = new String[k];
        hook = new Thread("matmul-kill-workers") {
            @Override
            public void run() {
                killAll();
            }
        };
        Runtime.getRuntime().addShutdownHook(hook);
    }

    static String javaBinary() {
        return ProcessHandle.current().info().command().orElse(
                System.getProperty("java.home") + "/bin/java");
    }

    /** Starts worker w (node w+1) with {@code args}. */
    void start(int w, List<String> args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(javaBinary());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add("-Djava.rmi.server.hostname=127.0.0.1");
        cmd.add(MatmulWorker.class.getName());
        cmd.addAll(args);
        Process p = new ProcessBuilder(cmd).start();
        processes.add(p);
        p.getOutputStream().close();
        Thread out = new Thread(() -> readStdout(w, p), "matmul-worker-" + w + "-stdout");
        out.setDaemon(true);
        out.start();
        Thread err = new Thread(() -> readStderr(w, p), "matmul-worker-" + w + "-stderr");
        err.setDaemon(true);
        err.start();
    }

    private void readStdout(int w, Process p) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.startsWith("PORT ")) {
                    try {
                        int port = Integer.parseInt(line.substring(5).trim());
                        synchronized (this) {
                            ports[w] = port;
                            notifyAll();
                        }
                    } catch (NumberFormatException e) {
                        // not a port line
                    }
                }
            }
        } catch (IOException e) {
            // the worker is gone
        }
    }

    private void readStderr(int w, Process p) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (!line.isBlank()) {
                    synchronized (this) {
                        lastErr[w] = line.strip();
                    }
                }
            }
        } catch (IOException e) {
            // the worker is gone
        }
    }

    /** Every worker's port, waiting at most {@code timeoutSeconds}; else one clear IOException. */
    synchronized int[] awaitPorts(long timeoutSeconds) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        while (true) {
            int missing = -1;
            for (int w = 0; w < ports.length; w++) {
                if (ports[w] == 0) {
                    missing = w;
                    Process p = processes.get(w);
                    if (!p.isAlive()) {
                        throw new IOException("worker " + w + " exited with status " + p.exitValue()
                                + " before announcing its port" + errSuffix(w));
                    }
                }
            }
            if (missing < 0) {
                return ports.clone();
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new IOException("worker " + missing + " did not announce its port within "
                        + timeoutSeconds + " s" + errSuffix(missing));
            }
            wait(Math.max(1, Math.min(100, TimeUnit.NANOSECONDS.toMillis(left))));
        }
    }

    /** A failed worker's last stderr line, for an error message. */
    synchronized String errSuffix(int w) {
        return lastErr[w] == null ? "" : " (its stderr: " + lastErr[w] + ")";
    }

    /** The first worker that died with a non-zero status, as a message suffix, or "". */
    String deadWorker() {
        for (int w = 0; w < processes.size(); w++) {
            Process p = processes.get(w);
            if (!p.isAlive() && p.exitValue() != 0) {
                return "; worker " + w + " exited with status " + p.exitValue() + errSuffix(w);
            }
        }
        return "";
    }

    /** Waits up to {@code seconds} for every worker to exit by itself. */
    void awaitExit(long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        for (Process p : processes) {
            long left = deadline - System.nanoTime();
            if (left > 0) {
                p.waitFor(left, TimeUnit.NANOSECONDS);
            }
        }
    }

    private void killAll() {
        for (Process p : processes) {
            if (p.isAlive()) {
                p.destroyForcibly();
            }
        }
    }

    @Override
    public void close() {
        killAll();
        for (Process p : processes) {
            try {
                p.waitFor(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // shutting down: the hook runs
        }
    }
}
