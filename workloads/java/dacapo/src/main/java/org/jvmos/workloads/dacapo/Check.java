package org.jvmos.workloads.dacapo;

import java.util.Objects;

/** Assertions for validate(): each failure names what was checked, what was expected and what was seen. */
public final class Check {
    private Check() {
    }

    public static void equal(String what, long expected, long actual) throws ValidationException {
        if (expected != actual) {
            throw new ValidationException(what + ": expected " + expected + ", got " + actual);
        }
    }

    public static void equal(String what, Object expected, Object actual) throws ValidationException {
        if (!Objects.equals(expected, actual)) {
            throw new ValidationException(what + ": expected " + expected + ", got " + actual);
        }
    }

    public static void atLeast(String what, long minimum, long actual) throws ValidationException {
        if (actual < minimum) {
            throw new ValidationException(what + ": expected at least " + minimum + ", got " + actual);
        }
    }

    public static void isTrue(boolean condition, String message) throws ValidationException {
        if (!condition) {
            throw new ValidationException(message);
        }
    }

    /**
     * Output that must not change between iterations: the first call records the value,
     * later calls compare with it.
     */
    public static final class Stable {
        private final String what;
        private Long first;

        public Stable(String what) {
            this.what = what;
        }

        public void check(long value) throws ValidationException {
            if (first == null) {
                first = value;
            } else if (first != value) {
                throw new ValidationException(what + " changed between iterations: first "
                        + Long.toHexString(first) + ", now " + Long.toHexString(value));
            }
        }
    }
}
