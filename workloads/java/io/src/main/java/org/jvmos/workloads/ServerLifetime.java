package org.jvmos.workloads;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * How a workload server's life ends: on SIGTERM/SIGINT or at its --max-seconds bound, with its
 * summary printed either way. A shutdown hook wakes {@link #await} and then waits, boundedly,
 * for {@link #close} (the summary printed), since the JVM halts as soon as the hooks return.
 *
 * <pre>try (ServerLifetime life = ServerLifetime.begin("chat")) {
 *     Cli.announce(port, portFile, out);
 *     boolean signalled = life.await(maxSeconds);
 *     ... print the summary ...
 * }</pre>
 */
public final class ServerLifetime implements AutoCloseable {
    private final CountDownLatch stop = new CountDownLatch(1);
    private final CountDownLatch printed = new CountDownLatch(1);
    private final Thread hook;

    private ServerLifetime(String name) {
        hook = new Thread(name + "-shutdown") {
            @Override
            public void run() {
                stop.countDown();
                try {
                    printed.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
    }

    /** Installs the shutdown hook. */
    public static ServerLifetime begin(String name) {
        ServerLifetime life = new ServerLifetime(name);
        Runtime.getRuntime().addShutdownHook(life.hook);
        return life;
    }

    /** Until a signal (true) or maxSeconds (false). */
    public boolean await(long maxSeconds) throws InterruptedException {
        return stop.await(maxSeconds, TimeUnit.SECONDS);
    }

    /** The summary is out: a waiting hook returns, and the hook is removed when it has not run. */
    @Override
    public void close() {
        printed.countDown();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // the JVM is shutting down: the hook is running and returns now
        }
    }
}
