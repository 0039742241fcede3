package org.jvmos.workloads.matmul;

import java.io.IOException;

/**
 * The simple parallel algorithm: A cut into k blocks of consecutive rows (the first n mod k
 * blocks one row longer); worker w gets its block of A and the whole of B in one message,
 * multiplies them and returns its rows of C in one message. Calls: k from the manager, one per
 * worker back: 2k.
 */
final class Spa {
    private Spa() {
    }

    static int rowsOf(int w, int n, int k) {
        return n / k + (w < n % k ? 1 : 0);
    }

    static int firstRow(int w, int n, int k) {
        return w * (n / k) + Math.min(w, n % k);
    }

    /** The manager's side of repetition {@code rep}. */
    static int[] manager(Node node, int[] a, int[] b, int n, int k, int rep) throws IOException {
        for (int w = 0; w < k; w++) {
            int rows = rowsOf(w, n, k);
            int[] data = new int[rows * n + n * n];
            System.arraycopy(a, firstRow(w, n, k) * n, data, 0, rows * n);
            System.arraycopy(b, 0, data, rows * n, n * n);
            node.send(w + 1, new Message(Message.TASK_SPA, 0, rep, rows, n, data));
        }
        int[] c = new int[n * n];
        for (int w = 0; w < k; w++) {
            Message r = node.receive(w + 1, Message.RESULT, rep);
            int rows = rowsOf(w, n, k);
            if (r.data.length != rows * n) {
                throw new IOException("worker " + w + " returned " + r.data.length + " ints, expected " + rows * n);
            }
            System.arraycopy(r.data, 0, c, firstRow(w, n, k) * n, rows * n);
        }
        return c;
    }

    /** A worker's side, given its task. */
    static void worker(Node node, Message task) throws IOException {
        int rows = task.rows;
        int n = task.cols;
        if ((long) rows * n + (long) n * n != task.data.length) {
            throw new IOException("bad SPA task: " + task.data.length + " ints for " + rows + " x " + n);
        }
        int[] c = Matrices.multiplyRows(task.data, rows, task.data, rows * n, n);
        node.send(0, new Message(Message.RESULT, node.self, task.step, rows, n, c));
    }
}
