package org.jvmos.workloads.ipc;

import java.math.BigInteger;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * The client's side of validation: a trial's inputs (from its seed) and the answers it expects,
 * worked out here rather than taken from the server's code, and the comparison of an answer
 * with them.
 */
final class Expect {

    /** Vector elements are drawn from [0, VALUE_BOUND). */
    static final int VALUE_BOUND = 1_000_000;

    final Benchmark benchmark;
    /** Per call: the single value sent (SS, SV, GRAB, FACT); null for the vector benchmarks. */
    final int[] values;
    /** The vector sent by every call (VS, VV, GCD, REV); null for the others. */
    final int[] vector;
    /** The answer every call of a vector benchmark expects: an int[] or an Integer. */
    private final Object vectorAnswer;

    private Expect(Benchmark benchmark, int[] values, int[] vector, Object vectorAnswer) {
        this.benchmark = benchmark;
        this.values = values;
        this.vector = vector;
        this.vectorAnswer = vectorAnswer;
    }

    /** The inputs of a trial: a new value per call, or one vector for all calls. */
    static Expect inputs(Benchmark b, int size, int calls, long seed, int grabSize) {
        Random rnd = new Random(seed);
        if (!b.sendsVector()) {
            int[] values = new int[calls];
            for (int k = 0; k < calls; k++) {
                switch (b) {
                    case SS:
                        values[k] = rnd.nextInt();
                        break;
                    case SV:
                        values[k] = size;
                        break;
                    case GRAB:
                        values[k] = rnd.nextInt(grabSize);
                        break;
                    case FACT:
                        values[k] = 1 + rnd.nextInt(ServerLogic.FACT_MAX);
                        break;
                    default:
                        throw new IllegalStateException(b.name());
                }
            }
            return new Expect(b, values, null, null);
        }
        int[] v = new int[size];
        if (b == Benchmark.GCD) {
            int g = 1 + rnd.nextInt(1000);
            for (int i = 0; i < size; i++) {
                v[i] = g * (1 + rnd.nextInt(1000));
            }
        } else {
            for (int i = 0; i < size; i++) {
                v[i] = rnd.nextInt(VALUE_BOUND);
            }
        }
        Object answer;
        switch (b) {
            case VS: {
                int s = 0;
                for (int x : v) {
                    s += x;
                }
                answer = s;
                break;
            }
            case GCD: {
                BigInteger g = BigInteger.ZERO;
                for (int x : v) {
                    g = g.gcd(BigInteger.valueOf(x));
                }
                answer = g.intValueExact();
                break;
            }
            case VV:
                answer = v.clone();
                break;
            case REV: {
                int[] r = new int[size];
                for (int i = 0; i < size; i++) {
                    r[size - 1 - i] = v[i];
                }
                answer = r;
                break;
            }
            default:
                throw new IllegalStateException(b.name());
        }
        return new Expect(b, null, v, answer);
    }

    /** What call k (0-based) expects: an Integer or an int[]. */
    Object answer(int k) {
        if (vector != null) {
            return vectorAnswer;
        }
        int x = values[k];
        switch (benchmark) {
            case SS:
                return x;
            case GRAB:
                return ServerLogic.grabValue(x);
            case SV: {
                int[] r = new int[x];
                for (int i = 0; i < x; i++) {
                    r[i] = i;
                }
                return r;
            }
            case FACT:
                return divisors(x);
            default:
                throw new IllegalStateException(benchmark.name());
        }
    }

    /** The divisors of n, ascending: pairs (d, n/d) up to the square root, sorted. */
    static int[] divisors(int n) {
        int[] found = new int[16];
        int count = 0;
        for (int d = 1; d <= n / d; d++) {
            if (n % d == 0) {
                if (count + 2 > found.length) {
                    found = Arrays.copyOf(found, found.length * 2);
                }
                found[count++] = d;
                if (d != n / d) {
                    found[count++] = n / d;
                }
            }
        }
        int[] out = Arrays.copyOf(found, count);
        Arrays.sort(out);
        return out;
    }

    /** Null if {@code answer} is {@code expected} (an Integer or an int[]); else what differs. */
    static String compare(Object expected, Object answer) {
        if (expected instanceof Integer) {
            if (!(answer instanceof Integer)) {
                return "the answer is " + describe(answer) + ", expected the int " + expected;
            }
            return expected.equals(answer) ? null : "the answer is " + answer + ", expected " + expected;
        }
        int[] e = (int[]) expected;
        int n;
        if (answer instanceof int[]) {
            n = ((int[]) answer).length;
        } else if (answer instanceof Object[]) {
            n = ((Object[]) answer).length;
        } else if (answer instanceof List) {
            n = ((List<?>) answer).size();
        } else {
            return "the answer is " + describe(answer) + ", expected a vector of " + e.length;
        }
        if (n != e.length) {
            return "the answer has " + n + " elements, expected " + e.length;
        }
        for (int i = 0; i < n; i++) {
            Object got;
            if (answer instanceof int[]) {
                got = ((int[]) answer)[i];
            } else if (answer instanceof Object[]) {
                got = ((Object[]) answer)[i];
            } else {
                got = ((List<?>) answer).get(i);
            }
            if (!(got instanceof Integer) || (Integer) got != e[i]) {
                return "element " + i + " is " + describe(got) + ", expected " + e[i];
            }
        }
        return null;
    }

    private static String describe(Object o) {
        if (o == null) {
            return "null";
        }
        if (o instanceof Integer) {
            return o.toString();
        }
        return "a " + o.getClass().getSimpleName();
    }
}
