package org.jvmos.workloads.ipc;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.List;

/**
 * The {@code sockets-text} primitive's messages: one line of text per message, written with
 * {@link DataOutputStream#writeChars} (two bytes per char, UTF-16BE, one write on the stream
 * below per byte) and read with {@link DataInputStream#readLine} (one read per byte, each byte a
 * char), as seed 000's section 5.3 describes its socket benchmarks. A char's high byte (0 for
 * ASCII) therefore arrives as a NUL char of its own; the parser skips NULs.
 *
 * <pre>request:  NAME int int ...      (SS 42, VV 1 2 3, SV 5)
 * reply:    = int int ...          (the answer: one int, or the vector's elements)
 *           ! message              (the server failed the call)</pre>
 */
final class TextCodec {

    private TextCodec() {
    }

    static String request(Benchmark b, int value) {
        return b.name() + ' ' + value + '\n';
    }

    static String request(Benchmark b, int[] vector) {
        StringBuilder sb = new StringBuilder(b.name().length() + 8 * vector.length + 2).append(b.name());
        for (int v : vector) {
            sb.append(' ').append(v);
        }
        return sb.append('\n').toString();
    }

    static String answer(int value) {
        return "= " + value + '\n';
    }

    static String answer(int[] vector) {
        StringBuilder sb = new StringBuilder(8 * vector.length + 3).append('=');
        for (int v : vector) {
            sb.append(' ').append(v);
        }
        return sb.append('\n').toString();
    }

    static String answer(List<?> vector) {
        StringBuilder sb = new StringBuilder(8 * vector.size() + 3).append('=');
        for (Object v : vector) {
            sb.append(' ').append(v);
        }
        return sb.append('\n').toString();
    }

    static String failure(String message) {
        return "! " + String.valueOf(message).replace('\n', ' ').replace('\r', ' ') + '\n';
    }

    /** Writes one message: writeChars, then a flush (which reaches the socket only if buffered). */
    static void write(DataOutputStream out, String message) throws IOException {
        out.writeChars(message);
        out.flush();
    }

    /** Reads one message; null at the end of the stream. */
    @SuppressWarnings("deprecation")
    static String read(DataInputStream in) throws IOException {
        return in.readLine();
    }

    /** The first token of a line (NULs skipped): the benchmark's name, "=" or "!". */
    static String head(String line) {
        StringBuilder sb = new StringBuilder(8);
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (c == ' ') {
                if (sb.length() > 0) {
                    break;
                }
            } else if (c != '\0') {
                sb.append(c);
            }
        }
        return sb.toString();
    }

    /** The text after the first token (NULs removed): a failure's message. */
    static String rest(String line) {
        String s = line.replace("\0", "");
        int sp = s.indexOf(' ');
        return sp < 0 ? "" : s.substring(sp + 1);
    }

    /** The integers after the first token, NULs skipped. */
    static int[] ints(String line) throws IOException {
        int n = line.length();
        int i = 0;
        // skip the head
        while (i < n && (line.charAt(i) == '\0' || line.charAt(i) == ' ')) {
            i++;
        }
        while (i < n && line.charAt(i) != ' ') {
            i++;
        }
        int count = 0;
        boolean inToken = false;
        for (int j = i; j < n; j++) {
            char c = line.charAt(j);
            if (c == ' ') {
                inToken = false;
            } else if (c != '\0' && !inToken) {
                inToken = true;
                count++;
            }
        }
        int[] out = new int[count];
        int k = 0;
        while (k < count) {
            while (line.charAt(i) == ' ' || line.charAt(i) == '\0') {
                i++;
            }
            boolean negative = false;
            if (line.charAt(i) == '-') {
                negative = true;
                i++;
            }
            long v = 0;
            int digits = 0;
            while (i < n && line.charAt(i) != ' ') {
                char c = line.charAt(i++);
                if (c == '\0') {
                    continue;
                }
                if (c < '0' || c > '9' || ++digits > 10) {
                    throw new IOException("malformed number in message at char " + (i - 1));
                }
                v = v * 10 + (c - '0');
            }
            if (digits == 0) {
                throw new IOException("malformed number in message at char " + i);
            }
            v = negative ? -v : v;
            if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
                throw new IOException("number out of int range in message: " + v);
            }
            out[k++] = (int) v;
        }
        return out;
    }
}
