package org.jvmos.workloads.dacapo;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;

/** One harness invocation with its exit code and captured output. */
final class Run {
    final int exit;
    final String out;
    final String err;

    private Run(int exit, String out, String err) {
        this.exit = exit;
        this.out = out;
        this.err = err;
    }

    static Run of(String... args) {
        return with(Benchmarks::create, args);
    }

    static Run with(Function<String, Benchmark> suite, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            exit = Harness.run(args, o, e, suite);
        }
        return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    String[] outLines() {
        return out.isEmpty() ? new String[0] : out.split("\n");
    }

    String lastOutLine() {
        String[] lines = outLines();
        return lines.length == 0 ? "" : lines[lines.length - 1];
    }
}
