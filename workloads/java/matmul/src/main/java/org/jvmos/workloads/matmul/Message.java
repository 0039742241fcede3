package org.jvmos.workloads.matmul;

/**
 * One message between two nodes (node 0 is the manager, node w+1 is worker w): a header of six
 * ints (kind, sender, step, rows, cols, length of data) and an int array. Every mechanism carries
 * exactly these fields; {@link #bytes()} is the message's application-level size, the same for
 * all mechanisms.
 */
final class Message {
    /** Manager to worker: every node's port (index = node id). Not counted. */
    static final int SETUP = 1;
    /** Manager to worker: an SPA task, the worker's rows of A followed by the whole of B. */
    static final int TASK_SPA = 2;
    /** Manager to worker: an MCA task, {n, pr, pc, bi, bj}, then the skewed A and B blocks. */
    static final int TASK_MCA = 3;
    /** Worker to worker (MCA): the first column of its A block, to the left neighbour. */
    static final int COLUMN = 4;
    /** Worker to worker (MCA): the first row of its B block, to the upper neighbour. */
    static final int ROW = 5;
    /** Worker to manager: the worker's block of C. */
    static final int RESULT = 6;
    /** Manager to worker: no more tasks; answer with STATS and exit. Not counted. */
    static final int DONE = 7;
    /** Worker to manager: the worker's counters (see {@link Node#statsWords()}). Not counted. */
    static final int STATS = 8;

    /** Header size on the wire: six ints. */
    static final int HEADER_BYTES = 24;

    final int kind;
    final int from;
    final int step;
    final int rows;
    final int cols;
    final int[] data;

    Message(int kind, int from, int step, int rows, int cols, int[] data) {
        this.kind = kind;
        this.from = from;
        this.step = step;
        this.rows = rows;
        this.cols = cols;
        this.data = data;
    }

    /** Whether this message is part of a multiplication (counted and timed), not control. */
    boolean counted() {
        return kind != SETUP && kind != DONE && kind != STATS;
    }

    /** The application-level size: header and 4 bytes per int. */
    long bytes() {
        return HEADER_BYTES + 4L * data.length;
    }

    static String kindName(int kind) {
        switch (kind) {
            case SETUP: return "SETUP";
            case TASK_SPA: return "TASK_SPA";
            case TASK_MCA: return "TASK_MCA";
            case COLUMN: return "COLUMN";
            case ROW: return "ROW";
            case RESULT: return "RESULT";
            case DONE: return "DONE";
            case STATS: return "STATS";
            default: return "kind " + kind;
        }
    }

    /** Longs as pairs of ints (high, low). */
    static int[] packLongs(long... values) {
        int[] out = new int[values.length * 2];
        for (int i = 0; i < values.length; i++) {
            out[2 * i] = (int) (values[i] >>> 32);
            out[2 * i + 1] = (int) values[i];
        }
        return out;
    }

    static long[] unpackLongs(int[] words) {
        long[] out = new long[words.length / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((long) words[2 * i] << 32) | (words[2 * i + 1] & 0xffffffffL);
        }
        return out;
    }
}
