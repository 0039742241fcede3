package org.jvmos.workloads.ipc;

import org.jvmos.workloads.Cli;
import java.util.Locale;

/**
 * Seed 000's benchmarks: the nano ones (Table 1) move a single value or a vector each way with
 * no work on the server; the micro ones (Table 2) have the same shapes with a little server-side
 * computation.
 *
 * <ul>
 *   <li>SS: one int, echoed. SV: one int n, answered by the vector 0, 1, ..., n-1 (the client
 *       sends n = size(V)). VS: a vector, answered by the sum of its elements (32-bit, wrapping).
 *       VV: a vector, answered by the same vector.</li>
 *   <li>GRAB (SS): an index into a vector the server generated once, answered by its element.
 *       FACT (SV): n, answered by the divisors of n in ascending order. GCD (VS): a vector,
 *       answered by the greatest common divisor of its elements. REV (VV): a vector, answered
 *       by the vector reversed.</li>
 * </ul>
 */
enum Benchmark {
    SS("nano", "SS"),
    SV("nano", "SV"),
    VS("nano", "VS"),
    VV("nano", "VV"),
    GRAB("micro", "SS"),
    FACT("micro", "SV"),
    GCD("micro", "VS"),
    REV("micro", "VV");

    /** "nano" (Table 1) or "micro" (Table 2). */
    final String kind;
    /** The shape: what the client sends (S or V), then what it receives. */
    final String type;

    Benchmark(String kind, String type) {
        this.kind = kind;
        this.type = type;
    }

    /** The client sends a vector (VS, VV, GCD, REV). */
    boolean sendsVector() {
        return type.charAt(0) == 'V';
    }

    /** The client receives a vector (SV, VV, FACT, REV). */
    boolean returnsVector() {
        return type.charAt(1) == 'V';
    }

    /** size(V) shapes the messages of this benchmark (SV, VS, VV, GCD, REV). */
    boolean usesSize() {
        return this == SV || sendsVector();
    }

    /** The XML-RPC method name ({@code bench.vv}, ...). */
    String method() {
        return "bench." + name().toLowerCase(Locale.ROOT);
    }

    /** The known names, for messages: {@code SS SV VS VV GRAB FACT GCD REV}. */
    static String names() {
        StringBuilder sb = new StringBuilder();
        for (Benchmark b : values()) {
            if (sb.length() > 0) {
                sb.append(' ');
            }
            sb.append(b.name());
        }
        return sb.toString();
    }

    /** Null when {@code name} is none of them (case-insensitive). */
    static Benchmark find(String name) {
        for (Benchmark b : values()) {
            if (b.name().equalsIgnoreCase(name)) {
                return b;
            }
        }
        return null;
    }

    static Benchmark parse(String name) throws Cli.UsageException {
        Benchmark b = find(name);
        if (b == null) {
            throw new Cli.UsageException("unknown benchmark '" + name + "' (known: " + names() + ")");
        }
        return b;
    }
}
