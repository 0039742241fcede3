package org.jvmos.workloads.ipc;

import java.io.Serializable;
import java.util.Vector;

/**
 * A call of the {@code sockets} primitive, written with ObjectOutputStream: the benchmark's name
 * and its argument, an Integer or a Vector of Integers (the types of seed 000's Java 1.5 code).
 */
final class Request implements Serializable {
    private static final long serialVersionUID = 1L;

    final String benchmark;
    final Integer value;
    final Vector<Integer> vector;

    Request(String benchmark, Integer value, Vector<Integer> vector) {
        this.benchmark = benchmark;
        this.value = value;
        this.vector = vector;
    }
}
