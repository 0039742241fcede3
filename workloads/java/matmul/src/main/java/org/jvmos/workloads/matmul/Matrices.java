package org.jvmos.workloads.matmul;

import java.util.SplittableRandom;

/** Square int matrices, row-major in one array. */
final class Matrices {
    private Matrices() {
    }

    /** An n x n matrix of integers 0..20 drawn from {@code rng}. */
    static int[] random(int n, SplittableRandom rng) {
        int[] m = new int[n * n];
        for (int i = 0; i < m.length; i++) {
            m[i] = rng.nextInt(21);
        }
        return m;
    }

    /** The sequential algorithm: the plain i-j-k triple loop. */
    static int[] multiply(int[] a, int[] b, int n) {
        int[] c = new int[n * n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                int sum = 0;
                for (int k = 0; k < n; k++) {
                    sum += a[i * n + k] * b[k * n + j];
                }
                c[i * n + j] = sum;
            }
        }
        return c;
    }

    /** The reference the products are checked against: i-k-j order, long sums. */
    static long[] reference(int[] a, int[] b, int n) {
        long[] c = new long[n * n];
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < n; k++) {
                long aik = a[i * n + k];
                for (int j = 0; j < n; j++) {
                    c[i * n + j] += aik * b[k * n + j];
                }
            }
        }
        return c;
    }

    /** The first mismatch as "C[i][j] = got, expected e", or null when equal. */
    static String mismatch(int[] c, long[] expected, int n) {
        for (int i = 0; i < expected.length; i++) {
            if (c[i] != expected[i]) {
                return "C[" + (i / n) + "][" + (i % n) + "] = " + c[i] + ", expected " + expected[i];
            }
        }
        return null;
    }

    /** Multiplies the rows x n block {@code a} by the n x n matrix {@code b}. */
    static int[] multiplyRows(int[] a, int rows, int[] b, int bOffset, int n) {
        int[] c = new int[rows * n];
        for (int i = 0; i < rows; i++) {
            for (int k = 0; k < n; k++) {
                int aik = a[i * n + k];
                int row = bOffset + k * n;
                for (int j = 0; j < n; j++) {
                    c[i * n + j] += aik * b[row + j];
                }
            }
        }
        return c;
    }
}
