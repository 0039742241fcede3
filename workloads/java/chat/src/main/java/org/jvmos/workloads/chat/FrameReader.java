package org.jvmos.workloads.chat;

import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;

/**
 * Reads newline-terminated frames from a stream with its own buffer (no per-byte calls, no
 * String per frame): {@link #next()} leaves the frame's bytes, without "\n" or "\r\n", at the
 * start of {@link #frame()}. Used by the server's reader threads and by the load's users.
 */
final class FrameReader {

    /** A frame longer than the reader's limit: the peer is not speaking the protocol. */
    static final class FrameTooLongException extends IOException {
        private static final long serialVersionUID = 1L;

        FrameTooLongException(int max) {
            super("frame longer than " + max + " bytes");
        }
    }

    private final InputStream in;
    private final int max;
    private final byte[] chunk = new byte[8192];
    private int pos;
    private int lim;
    private byte[] frame = new byte[128];
    /** Bytes of the frame being read so far: kept when a read times out, so that the next
     * call goes on with that frame (the open-loop load reads until its next send is due). */
    private int partial;
    private long consumed;

    FrameReader(InputStream in, int maxFrameBytes) {
        this.in = in;
        this.max = maxFrameBytes;
    }

    /**
     * Reads the next frame; returns its length, or -1 at the end of the stream (a last line
     * without its newline is dropped: the peer went away in the middle of a frame).
     */
    int next() throws IOException {
        int len = partial;
        while (true) {
            if (pos == lim) {
                partial = len;
                int n = in.read(chunk, 0, chunk.length);
                if (n < 0) {
                    return -1;
                }
                pos = 0;
                lim = n;
                consumed += n;
            }
            int start = pos;
            int nl = -1;
            for (int i = pos; i < lim; i++) {
                if (chunk[i] == '\n') {
                    nl = i;
                    break;
                }
            }
            int end = nl < 0 ? lim : nl;
            int add = end - start;
            if (len + add > max + 1) {          // + 1: room for a '\r' before the '\n'
                throw new FrameTooLongException(max);
            }
            if (len + add > frame.length) {
                frame = Arrays.copyOf(frame, Math.max(len + add, Math.min(frame.length * 2, max + 1)));
            }
            System.arraycopy(chunk, start, frame, len, add);
            len += add;
            if (nl >= 0) {
                pos = nl + 1;
                partial = 0;
                if (len > 0 && frame[len - 1] == '\r') {
                    len--;
                }
                if (len > max) {
                    throw new FrameTooLongException(max);
                }
                return len;
            }
            pos = lim;
        }
    }

    /** The buffer holding the last frame read (valid up to the length {@link #next()} returned). */
    byte[] frame() {
        return frame;
    }

    /** Bytes read from the stream so far (newlines included). */
    long consumed() {
        return consumed;
    }

    /** Whether {@code b[0, n)} starts with the ASCII {@code prefix}. */
    static boolean startsWith(byte[] b, int n, String prefix) {
        if (n < prefix.length()) {
            return false;
        }
        for (int i = 0; i < prefix.length(); i++) {
            if (b[i] != prefix.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code b[off, off + what.length)} equals {@code what} (and fits in {@code n}). */
    static boolean regionEquals(byte[] b, int n, int off, byte[] what) {
        if (off + what.length > n) {
            return false;
        }
        for (int i = 0; i < what.length; i++) {
            if (b[off + i] != what[i]) {
                return false;
            }
        }
        return true;
    }
}
