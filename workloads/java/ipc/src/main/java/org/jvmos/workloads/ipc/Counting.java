package org.jvmos.workloads.ipc;

import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/** Byte counters at the stream level, passing every call straight through. */
final class Counting {

    private Counting() {
    }

    /** Counts the bytes written through it; each write is one write on the stream below. */
    static final class Out extends FilterOutputStream {
        long bytes;

        Out(OutputStream out) {
            super(out);
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            bytes++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            bytes += len;
        }
    }

    /** Counts the bytes read through it. */
    static final class In extends FilterInputStream {
        long bytes;

        In(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int b = in.read();
            if (b >= 0) {
                bytes++;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = in.read(b, off, len);
            if (n > 0) {
                bytes += n;
            }
            return n;
        }

        @Override
        public long skip(long n) throws IOException {
            long k = in.skip(n);
            if (k > 0) {
                bytes += k;
            }
            return k;
        }
    }
}
