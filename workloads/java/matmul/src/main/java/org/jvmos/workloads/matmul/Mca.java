package org.jvmos.workloads.matmul;

import java.io.IOException;

/**
 * The modified Cannon's algorithm as seed 001 describes it. The manager pre-skews A and B by
 * element (A'[i][j] = A[i][(i+j) mod n], B'[i][j] = B[(i+j) mod n][j]) and cuts them into a pr x
 * pc grid of blocks of (n/pr) x (n/pc) elements, one block of each per worker (one message).
 * Each worker then repeats n times: C += A' .* B' element by element; and, the first n-1 times,
 * shifts the skewed matrices by one element: it sends the first column of its A' block to its
 * left neighbour and the first row of its B' block to its upper neighbour (two messages), and
 * takes in the column of its right neighbour and the row of its lower neighbour (the grid
 * wraps around). Last it returns its block of C (one message).
 *
 * <p>Grid: pr = the largest divisor of k not above sqrt(k), pc = k / pr (k = 4: 2 x 2, the
 * seed's case; k = 2: 1 x 2). n must be divisible by pr and by pc. When a neighbour is the worker
 * itself (pr = 1: the B' rows; pc = 1: the A' columns) the shift is done in place, without a
 * message. Calls per worker: 1 + 2(n-1) sent (1 + (n-1) when pr = 1), plus the manager's k: for a
 * square grid 2k + 2k(n-1) in all, the seed's count.
 */
final class Mca {
    private Mca() {
    }

    /** {pr, pc} for k workers. */
    static int[] grid(int k) {
        int pr = 1;
        for (int d = 1; (long) d * d <= k; d++) {
            if (k % d == 0) {
                pr = d;
            }
        }
        return new int[] {pr, k / pr};
    }

    static int[] manager(Node node, int[] a, int[] b, int n, int k, int rep) throws IOException {
        int[] g = grid(k);
        int pr = g[0];
        int pc = g[1];
        int tr = n / pr;
        int tc = n / pc;
        for (int w = 0; w < k; w++) {
            int bi = w / pc;
            int bj = w % pc;
            int[] data = new int[5 + 2 * tr * tc];
            data[0] = n;
            data[1] = pr;
            data[2] = pc;
            data[3] = bi;
            data[4] = bj;
            int p = 5;
            for (int i = 0; i < tr; i++) {
                int gi = bi * tr + i;
                for (int j = 0; j < tc; j++) {
                    int gj = bj * tc + j;
                    data[p++] = a[gi * n + (gi + gj) % n];
                }
            }
            for (int i = 0; i < tr; i++) {
                int gi = bi * tr + i;
                for (int j = 0; j < tc; j++) {
                    int gj = bj * tc + j;
                    data[p++] = b[((gi + gj) % n) * n + gj];
                }
            }
            node.send(w + 1, new Message(Message.TASK_MCA, 0, rep, tr, tc, data));
        }
        int[] c = new int[n * n];
        for (int w = 0; w < k; w++) {
            Message r = node.receive(w + 1, Message.RESULT, rep);
            if (r.data.length != tr * tc) {
                throw new IOException("worker " + w + " returned " + r.data.length + " ints, expected " + tr * tc);
            }
            int bi = w / pc;
            int bj = w % pc;
            for (int i = 0; i < tr; i++) {
                System.arraycopy(r.data, i * tc, c, (bi * tr + i) * n + bj * tc, tc);
            }
        }
        return c;
    }

    static void worker(Node node, Message task) throws IOException {
        int[] d = task.data;
        int n = d[0];
        int pr = d[1];
        int pc = d[2];
        int bi = d[3];
        int bj = d[4];
        int tr = task.rows;
        int tc = task.cols;
        if (d.length != 5 + 2 * tr * tc || tr * pr != n || tc * pc != n) {
            throw new IOException("bad MCA task");
        }
        int[] a = new int[tr * tc];
        int[] b = new int[tr * tc];
        System.arraycopy(d, 5, a, 0, tr * tc);
        System.arraycopy(d, 5 + tr * tc, b, 0, tr * tc);
        int left = 1 + bi * pc + (bj + pc - 1) % pc;
        int right = 1 + bi * pc + (bj + 1) % pc;
        int up = 1 + ((bi + pr - 1) % pr) * pc + bj;
        int down = 1 + ((bi + 1) % pr) * pc + bj;
        int[] c = new int[tr * tc];
        int[] column = new int[tr];
        int[] row = new int[tc];
        for (int s = 0; s < n; s++) {
            for (int i = 0; i < c.length; i++) {
                c[i] += a[i] * b[i];
            }
            if (s == n - 1) {
                break;
            }
            for (int i = 0; i < tr; i++) {
                column[i] = a[i * tc];
            }
            System.arraycopy(b, 0, row, 0, tc);
            if (left != node.self) {
                node.send(left, new Message(Message.COLUMN, node.self, s, tr, 1, column.clone()));
            }
            if (up != node.self) {
                node.send(up, new Message(Message.ROW, node.self, s, 1, tc, row.clone()));
            }
            int[] columnIn = right == node.self ? column : node.receive(right, Message.COLUMN, s).data;
            int[] rowIn = down == node.self ? row : node.receive(down, Message.ROW, s).data;
            if (columnIn.length != tr || rowIn.length != tc) {
                throw new IOException("bad shift message at step " + s);
            }
            for (int i = 0; i < tr; i++) {
                System.arraycopy(a, i * tc + 1, a, i * tc, tc - 1);
                a[i * tc + tc - 1] = columnIn[i];
            }
            System.arraycopy(b, tc, b, 0, (tr - 1) * tc);
            System.arraycopy(rowIn, 0, b, (tr - 1) * tc, tc);
        }
        node.send(0, new Message(Message.RESULT, node.self, task.step, tr, tc, c));
    }
}
