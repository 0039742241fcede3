package org.jvmos.workloads.dacapo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** The run's temporary directory: created fresh, removed at close and, failing that, at JVM exit. */
final class WorkDir implements AutoCloseable {
    private final Path root;
    private final Thread cleaner;

    WorkDir() throws IOException {
        root = Files.createTempDirectory("jvmos-dacapo-");
        // An interrupted run (Ctrl-C, a profiler killing the JVM with SIGTERM) must not leave gigabytes behind.
        cleaner = new Thread(() -> delete(root), "jvmos-dacapo-cleanup");
        Runtime.getRuntime().addShutdownHook(cleaner);
    }

    Path root() {
        return root;
    }

    /** A fresh sub-directory for one benchmark, so that several benchmarks in one run do not collide. */
    Path newDir(String name) throws IOException {
        return Files.createDirectories(root.resolve(name));
    }

    static void delete(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (IOException | UncheckedIOException e) {
            System.err.println("warning: could not delete " + dir + ": " + e.getMessage());
        }
    }

    @Override
    public void close() {
        delete(root);
        try {
            Runtime.getRuntime().removeShutdownHook(cleaner);
        } catch (IllegalStateException alreadyShuttingDown) {
            // the hook runs anyway; nothing left to do
        }
    }
}
