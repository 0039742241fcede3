package org.jvmos.workloads.ipc;

import java.util.Locale;

/** One flat JSON object, fields in the order they are added. */
final class Json {
    private final StringBuilder sb = new StringBuilder("{");

    private Json key(String key) {
        if (sb.length() > 1) {
            sb.append(',');
        }
        quote(sb, key);
        return this;
    }

    Json put(String key, String value) {
        key(key).sb.append(':');
        if (value == null) {
            sb.append("null");
        } else {
            quote(sb, value);
        }
        return this;
    }

    Json put(String key, long value) {
        key(key).sb.append(':').append(value);
        return this;
    }

    Json put(String key, boolean value) {
        key(key).sb.append(':').append(value);
        return this;
    }

    /** A fixed-point number with {@code decimals} decimals; null when not finite. */
    Json put(String key, double value, int decimals) {
        key(key).sb.append(':');
        if (Double.isNaN(value) || Double.isInfinite(value)) {
            sb.append("null");
        } else {
            sb.append(String.format(Locale.ROOT, "%." + decimals + "f", value));
        }
        return this;
    }

    Json put(String key, long[] values) {
        key(key).sb.append(":[");
        for (int i = 0; i < values.length; i++) {
            if (i > 0) {
                sb.append(',');
            }
            sb.append(values[i]);
        }
        sb.append(']');
        return this;
    }

    @Override
    public String toString() {
        return sb.toString() + "}";
    }

    static void quote(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }
}
