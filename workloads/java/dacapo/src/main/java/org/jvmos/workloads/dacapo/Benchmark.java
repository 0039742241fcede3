package org.jvmos.workloads.dacapo;

import java.nio.file.Path;

/**
 * One benchmark of the suite. The harness calls setup once, then for every iteration
 * prepareIteration (untimed), iterate (timed) and validate (untimed), then teardown.
 * Instances are used by one harness thread; iterate may start its own workers.
 */
public interface Benchmark {

    /** The DaCapo name, as given on the command line. */
    String name();

    /** Builds the inputs; workDir is a fresh directory owned by this benchmark. */
    void setup(Size size, Path workDir, int threads) throws Exception;

    /** Resets state that one iteration consumes (DaCapo's preIteration); not timed. */
    default void prepareIteration() throws Exception {
    }

    /** The measured work. */
    void iterate() throws Exception;

    /** Checks the last iteration's output; throws ValidationException if it is wrong. */
    void validate() throws Exception;

    default void teardown() throws Exception {
    }
}
