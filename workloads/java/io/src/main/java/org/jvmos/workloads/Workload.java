package org.jvmos.workloads;

import java.io.PrintStream;
import java.util.List;

/**
 * The opening every workload program shares: its command line is parsed with {@link Cli}, a bad
 * one becomes one {@code error: ...} line on stderr and exit status 2, and {@code main} exits
 * with the status the workload returned.
 *
 * <p>A workload extends this class, names its options in the constructor and does its work in
 * {@link #run(Cli, PrintStream, PrintStream)}, reading its options first: a
 * {@link Cli.UsageException} therefore always comes before any output. That method keeps the name
 * {@code run} because recorded Java call sites name it ({@code BlockingIo.run -> ...}).
 *
 * <p>A subclass rather than a lambda on purpose: a lambda or method reference in {@code main} is
 * linked through java.lang.invoke at start-up, work of its own that these programs' start-up did
 * not do before and that jvmos would see.
 */
public abstract class Workload {

    private final List<String> valueOptions;
    private final List<String> flagOptions;

    /** Options given without their leading dashes: {@code valueOptions} take a value, flags none. */
    protected Workload(List<String> valueOptions, List<String> flagOptions) {
        this.valueOptions = valueOptions;
        this.flagOptions = flagOptions;
    }

    /** The work; returns the exit status (0 done, 1 runtime failure). */
    protected abstract int run(Cli options, PrintStream out, PrintStream err) throws Cli.UsageException;

    /** Parses {@code args} and runs; returns the exit status instead of exiting, for the tests. */
    public final int run(String[] args, PrintStream out, PrintStream err) {
        try {
            return run(Cli.parse(args, valueOptions, flagOptions), out, err);
        } catch (Cli.UsageException e) {
            err.println("error: " + e.getMessage());
            return Cli.EXIT_USAGE;
        }
    }

    /**
     * For {@code main}: runs on the process's streams and exits only on failure, so that a
     * successful run ends the JVM as any program whose main returns.
     */
    public final void runAndExitOnFailure(String[] args) {
        int rc = run(args, System.out, System.err);
        System.out.flush();
        if (rc != 0) {
            System.exit(rc);
        }
    }

    /**
     * For {@code main} of the servers and HTTP clients: always exits, so that no stray
     * non-daemon thread (Tomcat's, the JDK's keep-alive) can keep the JVM alive.
     */
    public final void runAndExit(String[] args) {
        int rc = run(args, System.out, System.err);
        System.out.flush();
        System.exit(rc);
    }
}
