package org.jvmos.workloads.dacapo;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Command line: {@code BENCH... [--iterations N] [--size small|default|large] [--threads T]} or {@code --list}.
 * Progress goes to stderr in DaCapo's "=====" style; stdout carries only one JSON line per benchmark,
 * so that the last stdout line is always the result of the last benchmark.
 * Exit codes: 0 passed, 1 a benchmark failed (exception or validation), 2 usage error.
 */
public final class Harness {
    static final int EXIT_OK = 0;
    static final int EXIT_FAILED = 1;
    static final int EXIT_USAGE = 2;

    private static final String USAGE =
            "usage: java -jar jvmos-dacapo.jar BENCH... [--iterations N] [--size small|default|large]"
                    + " [--threads T] | --list";

    private Harness() {
    }

    public static void main(String[] args) {
        // batik and fop rasterise with Java2D; no benchmark may try to open a display
        System.setProperty("java.awt.headless", "true");
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the command line; returns the exit code instead of exiting so that tests can call it. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        return run(args, out, err, Benchmarks::create);
    }

    /** As above with another suite, so that tests can run a benchmark that fails on purpose. */
    static int run(String[] args, PrintStream out, PrintStream err, Function<String, Benchmark> suite) {
        Options opts;
        try {
            opts = Options.parse(args, suite);
        } catch (IllegalArgumentException e) {
            err.println("error: " + e.getMessage());
            return EXIT_USAGE;
        }
        if (opts.help) {
            out.println(USAGE);
            return EXIT_OK;
        }
        if (opts.list) {
            for (String name : Benchmarks.names()) {
                out.println(name);
            }
            return EXIT_OK;
        }
        // Benchmark code sometimes prints (jython scripts, library banners): keep that off the JSON channel.
        PrintStream realOut = System.out;
        System.setOut(err);
        try (WorkDir work = new WorkDir()) {
            for (String name : opts.benches) {
                Result result = runOne(suite.apply(name), opts, work.newDir(name), err);
                out.println(result.toJson());
                out.flush();
                if (!result.passed) {
                    return EXIT_FAILED;
                }
            }
            return EXIT_OK;
        } catch (IOException e) {
            err.println("error: cannot create the work directory: " + e.getMessage());
            return EXIT_FAILED;
        } finally {
            System.setOut(realOut);
        }
    }

    private static Result runOne(Benchmark bench, Options opts, Path dir, PrintStream err) {
        String name = bench.name();
        Result result = new Result(name, opts);
        String banner = "===== jvmos-dacapo " + name + " ";
        try {
            bench.setup(opts.size, dir, opts.threads);
            for (int i = 0; i < opts.iterations; i++) {
                bench.prepareIteration();
                err.println(banner + "starting =====");
                err.flush();
                long start = System.nanoTime();
                bench.iterate();
                long elapsed = System.nanoTime() - start;
                bench.validate();
                result.iterationNs.add(elapsed);
                err.println(banner + "PASSED in " + elapsed / 1_000_000 + " msec =====");
                err.flush();
            }
            result.passed = true;
        } catch (ValidationException e) {
            result.error = e.getMessage();
            err.println(banner + "FAILED validation: " + e.getMessage() + " =====");
        } catch (Exception | LinkageError | OutOfMemoryError | StackOverflowError e) {
            // A crash is a failure too, with the trace: a benchmark that dies must never look like a fast one.
            result.error = e.toString();
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            err.print(trace);
            err.println(banner + "FAILED: " + e + " =====");
        } finally {
            try {
                bench.teardown();
            } catch (Exception e) {
                err.println("warning: " + name + " teardown: " + e);
            }
            WorkDir.delete(dir);
        }
        return result;
    }

    /** The parsed command line. */
    static final class Options {
        final List<String> benches = new ArrayList<>();
        int iterations = 1;
        Size size = Size.DEFAULT;
        int threads = Runtime.getRuntime().availableProcessors();
        boolean list;
        boolean help;

        static Options parse(String[] args, Function<String, Benchmark> suite) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String arg = args[i];
                String value = null;
                int eq = arg.indexOf('=');
                if (arg.startsWith("--") && eq > 0) {
                    value = arg.substring(eq + 1);
                    arg = arg.substring(0, eq);
                }
                switch (arg) {
                    case "--list":
                    case "-l":
                        o.list = true;
                        break;
                    case "--help":
                    case "-h":
                        o.help = true;
                        break;
                    case "--iterations":
                    case "-n":
                        value = value != null ? value : next(args, ++i, arg);
                        o.iterations = positive(arg, value);
                        break;
                    case "--threads":
                    case "-t":
                        value = value != null ? value : next(args, ++i, arg);
                        o.threads = positive(arg, value);
                        break;
                    case "--size":
                    case "-s":
                        value = value != null ? value : next(args, ++i, arg);
                        o.size = Size.parse(value);
                        if (o.size == null) {
                            throw new IllegalArgumentException("--size must be small, default or large, got '"
                                    + value + "'");
                        }
                        break;
                    default:
                        if (arg.startsWith("-")) {
                            throw new IllegalArgumentException("unknown option " + arg + "; " + USAGE);
                        }
                        if (suite.apply(arg) == null) {
                            throw new IllegalArgumentException("unknown benchmark '" + arg + "' (known: "
                                    + String.join(", ", Benchmarks.names()) + ")");
                        }
                        o.benches.add(arg);
                }
            }
            if (!o.list && !o.help && o.benches.isEmpty()) {
                throw new IllegalArgumentException("no benchmark given; " + USAGE);
            }
            return o;
        }

        private static String next(String[] args, int i, String option) {
            if (i >= args.length) {
                throw new IllegalArgumentException(option + " needs a value");
            }
            return args[i];
        }

        private static int positive(String option, String value) {
            try {
                int n = Integer.parseInt(value);
                if (n >= 1) {
                    return n;
                }
            } catch (NumberFormatException ignored) {
                // reported below with the option's name
            }
            throw new IllegalArgumentException(option + " needs a positive integer, got '" + value + "'");
        }
    }

    /** What one benchmark's JSON line reports. */
    static final class Result {
        final String bench;
        final Options opts;
        final List<Long> iterationNs = new ArrayList<>();
        boolean passed;
        String error;

        Result(String bench, Options opts) {
            this.bench = bench;
            this.opts = opts;
        }

        String toJson() {
            StringBuilder sb = new StringBuilder(256);
            sb.append("{\"workload\":\"dacapo\",\"bench\":").append(quote(bench))
                    .append(",\"size\":").append(quote(opts.size.label()))
                    .append(",\"threads\":").append(opts.threads)
                    .append(",\"iterations\":").append(opts.iterations)
                    .append(",\"iteration_ns\":[");
            for (int i = 0; i < iterationNs.size(); i++) {
                sb.append(i == 0 ? "" : ",").append(iterationNs.get(i));
            }
            sb.append("],\"passed\":").append(passed);
            if (error != null) {
                sb.append(",\"error\":").append(quote(error));
            }
            sb.append(",\"java_version\":").append(quote(System.getProperty("java.version"))).append('}');
            return sb.toString();
        }
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }
}
