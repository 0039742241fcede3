package org.jvmos.workloads.ipc;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The server side of the benchmarks, shared by every primitive: GRAB's vector (generated once),
 * the micro benchmarks' computations, and the count of calls served.
 *
 * <p>GRAB's vector holds {@link #grabValue(int)} at index i: a fixed-seed pseudo-random function
 * of i, so that the client can work out the expected element without the server's vector (it
 * needs the same --grab-size only to pick its indices in range).
 */
class ServerLogic {

    /** The seed of GRAB's vector ("jvmosIPC"). */
    static final long GRAB_SEED = 0x6a766d6f73495043L;
    static final int DEFAULT_GRAB_SIZE = 100_000;
    /** The largest vector either side builds or accepts (SV's n, size(V)). */
    static final int MAX_VECTOR = 1_000_000;
    /** FACT's argument is in [1, FACT_MAX]. */
    static final int FACT_MAX = 1 << 24;

    private final int[] grab;
    private final AtomicLong calls = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    /** Test hook: the n-th call served (1-based) gets a wrong answer; 0 = none. */
    private volatile long faultyCall;

    ServerLogic(int grabSize) {
        grab = new int[grabSize];
        for (int i = 0; i < grabSize; i++) {
            grab[i] = grabValue(i);
        }
    }

    /** Element i of GRAB's vector: SplitMix64 of the seed and i, in [0, 2^31). */
    static int grabValue(int i) {
        long z = GRAB_SEED + (i + 1L) * 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return (int) (z >>> 33);
    }

    int grabSize() {
        return grab.length;
    }

    long calls() {
        return calls.get();
    }

    long failures() {
        return failures.get();
    }

    /** Test hook: answer the n-th call from now on (1-based, counted from the start) wrongly. */
    void breakCall(long n) {
        faultyCall = n;
    }

    /**
     * Counts one call served; true if this call is the one the test hook breaks, in which case
     * the primitive must alter its answer (see {@link #tamper(int)}).
     */
    boolean served() {
        return calls.incrementAndGet() == faultyCall;
    }

    void failed() {
        failures.incrementAndGet();
    }

    /** The wrong value the test hook puts in place of {@code v}. */
    static int tamper(int v) {
        return v + 1;
    }

    int grab(int index) {
        if (index < 0 || index >= grab.length) {
            throw new IllegalArgumentException("GRAB index " + index + " outside the server's vector [0, "
                    + grab.length + ")");
        }
        return grab[index];
    }

    /** SV's n, checked. */
    static int vectorSize(int n) {
        if (n < 0 || n > MAX_VECTOR) {
            throw new IllegalArgumentException("SV size " + n + " outside [0, " + MAX_VECTOR + "]");
        }
        return n;
    }

    /** The divisors of n (1 <= n <= FACT_MAX), ascending. */
    static int[] factors(int n) {
        if (n < 1 || n > FACT_MAX) {
            throw new IllegalArgumentException("FACT argument " + n + " outside [1, " + FACT_MAX + "]");
        }
        int[] low = new int[64];
        int[] high = new int[64];
        int nl = 0;
        int nh = 0;
        for (int d = 1; (long) d * d <= n; d++) {
            if (n % d == 0) {
                if (nl == low.length) {
                    low = java.util.Arrays.copyOf(low, nl * 2);
                    high = java.util.Arrays.copyOf(high, nl * 2);
                }
                low[nl++] = d;
                if (d != n / d) {
                    high[nh++] = n / d;
                }
            }
        }
        int[] out = new int[nl + nh];
        System.arraycopy(low, 0, out, 0, nl);
        for (int i = 0; i < nh; i++) {
            out[nl + i] = high[nh - 1 - i];
        }
        return out;
    }

    static int gcd(int a, int b) {
        a = Math.abs(a);
        b = Math.abs(b);
        while (b != 0) {
            int t = a % b;
            a = b;
            b = t;
        }
        return a;
    }

    /** The gcd of a list of Integers (0 for an empty one). */
    static int gcd(List<?> v) {
        int g = 0;
        for (Object o : v) {
            g = gcd(g, (Integer) o);
        }
        return g;
    }

    /** The 32-bit (wrapping) sum of a list of Integers. */
    static int sum(List<?> v) {
        int s = 0;
        for (Object o : v) {
            s += (Integer) o;
        }
        return s;
    }

    /** The gcd of an array (0 for an empty one). */
    static int gcd(int[] v) {
        int g = 0;
        for (int x : v) {
            g = gcd(g, x);
        }
        return g;
    }

    /** The 32-bit (wrapping) sum of an array. */
    static int sum(int[] v) {
        int s = 0;
        for (int x : v) {
            s += x;
        }
        return s;
    }
}
