package org.jvmos.workloads.dacapo;

import java.util.Locale;

/** The input size of a run: small for tests, default for experiments, large for long runs. */
public enum Size {
    SMALL, DEFAULT, LARGE;

    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    public int pick(int small, int dflt, int large) {
        switch (this) {
            case SMALL:
                return small;
            case LARGE:
                return large;
            default:
                return dflt;
        }
    }

    /** Returns null for an unknown label so that the caller can report a usage error. */
    public static Size parse(String label) {
        for (Size s : values()) {
            if (s.label().equals(label)) {
                return s;
            }
        }
        return null;
    }
}
