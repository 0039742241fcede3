package org.jvmos.workloads.ipc;

import java.io.Serializable;
import java.util.Vector;

/** The answer to a {@link Request}: an Integer, a Vector of Integers, or the server's error. */
final class Reply implements Serializable {
    private static final long serialVersionUID = 1L;

    final Integer value;
    final Vector<Integer> vector;
    final String error;

    Reply(Integer value, Vector<Integer> vector, String error) {
        this.value = value;
        this.vector = vector;
        this.error = error;
    }
}
