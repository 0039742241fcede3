package org.jvmos.workloads;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Runs a workload's {@code run(args, out, err)} and captures its output. */
final class Run {

    final int rc;
    final String out;
    final String err;

    private Run(int rc, String out, String err) {
        this.rc = rc;
        this.out = out;
        this.err = err;
    }

    static Run of(Workload w, String... args) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        int rc;
        try (PrintStream po = new PrintStream(o, true, StandardCharsets.UTF_8);
             PrintStream pe = new PrintStream(e, true, StandardCharsets.UTF_8)) {
            rc = w.run(args, po, pe);
        }
        return new Run(rc, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
    }

    String[] lines() {
        return out.strip().split("\n");
    }

    String lastLine() {
        String[] l = lines();
        return l[l.length - 1];
    }

    /** The integer value of {@code "key":N} in the last stdout line. */
    long num(String key) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(key) + "\":(-?\\d+)").matcher(lastLine());
        if (!m.find()) {
            throw new AssertionError("no numeric \"" + key + "\" in: " + lastLine());
        }
        return Long.parseLong(m.group(1));
    }

    @Override
    public String toString() {
        return "rc=" + rc + "\nstdout:\n" + out + "stderr:\n" + err;
    }
}
