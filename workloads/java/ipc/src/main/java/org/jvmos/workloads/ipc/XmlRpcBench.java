package org.jvmos.workloads.ipc;

import java.util.Arrays;

/**
 * The XML-RPC handler: its public methods are the benchmarks, {@code bench.ss} ...
 * {@code bench.rev}. Single values travel as {@code <i4>}, vectors as {@code <array>}s, which
 * Apache XML-RPC 3 hands over as {@code Object[]} of Integers and writes back from
 * {@code Object[]}. One instance serves every request (it keeps no per-request state).
 */
public final class XmlRpcBench {

    private final ServerLogic logic;

    XmlRpcBench(ServerLogic logic) {
        this.logic = logic;
    }

    private Integer done(int value) {
        return logic.served() ? ServerLogic.tamper(value) : value;
    }

    private Object[] done(Object[] vector, boolean fresh) {
        if (logic.served()) {
            Object[] v = vector.length == 0 ? new Object[] {0} : fresh ? vector : vector.clone();
            v[0] = ServerLogic.tamper((Integer) v[0]);
            return v;
        }
        return vector;
    }

    private RuntimeException failed(String benchmark, RuntimeException e) {
        logic.served();
        logic.failed();
        return new IllegalArgumentException(benchmark + ": " + e.getMessage(), e);
    }

    public Integer ss(Integer value) {
        return done(value);
    }

    public Object[] sv(Integer n) {
        try {
            int size = ServerLogic.vectorSize(n);
            Object[] v = new Object[size];
            for (int i = 0; i < size; i++) {
                v[i] = i;
            }
            return done(v, true);
        } catch (RuntimeException e) {
            throw failed("SV", e);
        }
    }

    public Integer vs(Object[] vector) {
        try {
            return done(ServerLogic.sum(Arrays.asList(vector)));
        } catch (RuntimeException e) {
            throw failed("VS", e);
        }
    }

    public Object[] vv(Object[] vector) {
        return done(vector, false);
    }

    public Integer grab(Integer index) {
        try {
            return done(logic.grab(index));
        } catch (RuntimeException e) {
            throw failed("GRAB", e);
        }
    }

    public Object[] fact(Integer n) {
        try {
            int[] f = ServerLogic.factors(n);
            Object[] v = new Object[f.length];
            for (int i = 0; i < f.length; i++) {
                v[i] = f[i];
            }
            return done(v, true);
        } catch (RuntimeException e) {
            throw failed("FACT", e);
        }
    }

    public Integer gcd(Object[] vector) {
        try {
            return done(ServerLogic.gcd(Arrays.asList(vector)));
        } catch (RuntimeException e) {
            throw failed("GCD", e);
        }
    }

    public Object[] rev(Object[] vector) {
        int n = vector.length;
        Object[] v = new Object[n];
        for (int i = 0; i < n; i++) {
            v[i] = vector[n - 1 - i];
        }
        return done(v, true);
    }
}
