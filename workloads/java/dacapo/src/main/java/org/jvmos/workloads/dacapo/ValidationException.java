package org.jvmos.workloads.dacapo;

/** A benchmark produced wrong output: the run must fail instead of reporting a time. */
public final class ValidationException extends Exception {
    private static final long serialVersionUID = 1L;

    public ValidationException(String message) {
        super(message);
    }
}
