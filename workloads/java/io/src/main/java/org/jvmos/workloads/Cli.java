package org.jvmos.workloads;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Minimal command-line, JSON and port-file helpers shared by the workloads (no dependencies).
 *
 * <p>Options have the form {@code --name value} (or {@code --name=value}); flags have the form
 * {@code --name}. Any problem is reported as a {@link UsageException}, which {@link Workload}
 * turns into one {@code error: ...} line on stderr and exit status 2.
 */
public final class Cli {

    /** Exit status for bad usage (unknown option, bad number, ...). */
    public static final int EXIT_USAGE = 2;

    /** Raised for any invalid command line. */
    public static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        public UsageException(String message) {
            super(message);
        }
    }

    private final Map<String, String> values = new HashMap<>();
    private final Set<String> flags = new HashSet<>();

    private Cli() {
    }

    /**
     * Parses {@code args}. {@code valueOptions} take one argument, {@code flagOptions} take none;
     * both are given without the leading dashes.
     */
    public static Cli parse(String[] args, List<String> valueOptions, List<String> flagOptions)
            throws UsageException {
        Cli cli = new Cli();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--") || arg.length() == 2) {
                throw new UsageException("unexpected argument '" + arg + "'");
            }
            String name = arg.substring(2);
            String inline = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                inline = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            if (valueOptions.contains(name)) {
                String value;
                if (inline != null) {
                    value = inline;
                } else if (i + 1 < args.length) {
                    value = args[++i];
                } else {
                    throw new UsageException("option --" + name + " needs a value");
                }
                if (cli.values.containsKey(name)) {
                    throw new UsageException("option --" + name + " given more than once");
                }
                cli.values.put(name, value);
            } else if (flagOptions.contains(name)) {
                if (inline != null) {
                    throw new UsageException("flag --" + name + " takes no value");
                }
                cli.flags.add(name);
            } else {
                throw new UsageException("unknown option --" + name);
            }
        }
        return cli;
    }

    public boolean flag(String name) {
        return flags.contains(name);
    }

    public String string(String name, String def) throws UsageException {
        String v = values.get(name);
        if (v == null) {
            if (def == null) {
                throw new UsageException("missing required option --" + name);
            }
            return def;
        }
        if (v.isEmpty()) {
            throw new UsageException("option --" + name + " must not be empty");
        }
        return v;
    }

    /** A long in [{@code min}, {@code max}]; {@code def} is used when the option is absent. */
    public long longValue(String name, long def, long min, long max) throws UsageException {
        String v = values.get(name);
        if (v == null) {
            return def;
        }
        return parseLong(name, v, min, max);
    }

    public int intValue(String name, int def, int min, int max) throws UsageException {
        return (int) longValue(name, def, min, max);
    }

    /** A comma-separated list of ints, each in [{@code min}, {@code max}]. */
    int[] intList(String name, int[] def, int min, int max) throws UsageException {
        String v = values.get(name);
        if (v == null) {
            return def.clone();
        }
        String[] parts = v.split(",", -1);
        int[] out = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            out[i] = (int) parseLong(name, parts[i].trim(), min, max);
        }
        return out;
    }

    private static long parseLong(String name, String v, long min, long max) throws UsageException {
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new UsageException("bad number for --" + name + ": '" + v + "'");
        }
        if (n < min || n > max) {
            throw new UsageException("--" + name + " must be in [" + min + ", " + max + "], got " + n);
        }
        return n;
    }

    // ---------------------------------------------------------------- JSON

    /** Ordered builder for one flat JSON object, written by hand. */
    public static final class Json {
        private final Map<String, String> fields = new LinkedHashMap<>();

        public Json put(String key, String value) {
            fields.put(key, value == null ? "null" : quote(value));
            return this;
        }

        public Json put(String key, long value) {
            fields.put(key, Long.toString(value));
            return this;
        }

        public Json put(String key, boolean value) {
            fields.put(key, Boolean.toString(value));
            return this;
        }

        public Json put(String key, double value) {
            fields.put(key, number(value));
            return this;
        }

        public Json put(String key, double[] values) {
            List<String> parts = new ArrayList<>(values.length);
            for (double d : values) {
                parts.add(number(d));
            }
            fields.put(key, "[" + String.join(",", parts) + "]");
            return this;
        }

        /** A fixed-point number with {@code decimals} decimals; null when not finite. */
        public Json put(String key, double value, int decimals) {
            fields.put(key, Double.isNaN(value) || Double.isInfinite(value) ? "null"
                    : String.format(java.util.Locale.ROOT, "%." + decimals + "f", value));
            return this;
        }

        public Json put(String key, long[] values) {
            List<String> parts = new ArrayList<>(values.length);
            for (long v : values) {
                parts.add(Long.toString(v));
            }
            fields.put(key, "[" + String.join(",", parts) + "]");
            return this;
        }

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder("{");
            boolean first = true;
            for (Map.Entry<String, String> e : fields.entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                sb.append(quote(e.getKey())).append(':').append(e.getValue());
            }
            return sb.append('}').toString();
        }

        private static String number(double d) {
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                return "null";
            }
            // Fixed notation with 4 decimals: stable, parseable, no exponent.
            return String.format(java.util.Locale.ROOT, "%.4f", d);
        }

        static String quote(String s) {
            StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"':
                        sb.append("\\\"");
                        break;
                    case '\\':
                        sb.append("\\\\");
                        break;
                    case '\n':
                        sb.append("\\n");
                        break;
                    case '\r':
                        sb.append("\\r");
                        break;
                    case '\t':
                        sb.append("\\t");
                        break;
                    default:
                        if (c < 0x20) {
                            sb.append(String.format("\\u%04x", (int) c));
                        } else {
                            sb.append(c);
                        }
                }
            }
            return sb.append('"').toString();
        }
    }

    /** A JSON summary pre-filled with the workload name. */
    static Json summary(String workload) {
        return new Json().put("workload", workload);
    }

    static String javaVersion() {
        return System.getProperty("java.version", "unknown");
    }

    /** The port written to {@code portFile} (when not empty), then printed as "PORT n". */
    public static void announce(int port, String portFile, java.io.PrintStream out) throws IOException {
        if (!portFile.isEmpty()) {
            writePortFile(java.nio.file.Paths.get(portFile), port);
        }
        out.println("PORT " + port);
        out.flush();
    }

    /**
     * Writes "port\n" to PATH.tmp, then renames it over PATH, so that a reader polling for the
     * file never sees a partial one.
     */
    public static void writePortFile(Path target, int port) throws IOException {
        Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
        Files.write(tmp, (port + "\n").getBytes(StandardCharsets.US_ASCII));
        try {
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
        }
    }
}
