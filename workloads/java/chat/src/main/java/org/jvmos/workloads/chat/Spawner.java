package org.jvmos.workloads.chat;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/**
 * How the server starts its per-connection threads: {@code platform} ({@code new Thread}, daemon)
 * or {@code virtual} (JDK 21+ virtual threads, reached by reflection because the module is
 * compiled for release 17). Only the accept thread calls {@link #start}.
 */
abstract class Spawner {

    /** The mode's name as given to {@code --threads}. */
    abstract String mode();

    /** Starts {@code task} on a new thread called {@code name}. */
    abstract Thread start(String name, Runnable task);

    static Spawner platform() {
        return new Platform();
    }

    /** Whether this JDK has virtual threads as a final feature (JDK 21 or later). */
    static boolean virtualAvailable() {
        return Runtime.version().feature() >= 21;
    }

    /**
     * The virtual-thread spawner. Call only when {@link #virtualAvailable()}; a JDK that has the
     * version but not the API is an {@link IllegalStateException}.
     */
    static Spawner virtual() {
        try {
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            // through the public interface: the builder's own class is not accessible
            Method unstarted = Class.forName("java.lang.Thread$Builder")
                    .getMethod("unstarted", Runnable.class);
            return new Virtual(builder, unstarted);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no virtual threads in this JDK: " + e, e);
        }
    }

    private static final class Platform extends Spawner {
        @Override
        String mode() {
            return "platform";
        }

        @Override
        Thread start(String name, Runnable task) {
            Thread t = new Thread(task, name);
            t.setDaemon(true);
            t.start();
            return t;
        }
    }

    private static final class Virtual extends Spawner {
        private final Object builder;
        private final Method unstarted;

        Virtual(Object builder, Method unstarted) {
            this.builder = builder;
            this.unstarted = unstarted;
        }

        @Override
        String mode() {
            return "virtual";
        }

        @Override
        Thread start(String name, Runnable task) {
            Thread t;
            try {
                t = (Thread) unstarted.invoke(builder, task);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof RuntimeException) {
                    throw (RuntimeException) cause;
                }
                if (cause instanceof Error) {
                    throw (Error) cause;
                }
                throw new IllegalStateException(cause);
            }
            t.setName(name);
            t.start();
            return t;
        }
    }
}
