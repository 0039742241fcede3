package org.jvmos.workloads.dacapo;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.zip.CRC32;
import java.util.zip.Deflater;
import java.util.zip.Inflater;
import java.util.zip.InflaterInputStream;

/**
 * A document store's reader on T threads: every document of the generated corpus is kept
 * zlib-compressed (made in setup), and each iteration decompresses all of them and counts their
 * words, the way a server reads compressed records or a search engine its stored fields. By
 * default each document is read through {@code new InflaterInputStream(in)}, which makes a new
 * Inflater (a native zlib stream: its state and window malloc'ed) and ends it on close: an
 * allocator-heavy pattern. With {@code -Djvmos.dacapo.inflate.reuse=true} each worker thread keeps
 * one Inflater and resets it per document: the same bytes decompressed, no zlib stream made per
 * document. Validation: every document's word count equals its token count, and the checksum of
 * all the text is the same in every iteration.
 */
final class InflateBenchmark implements Benchmark {
    private static final long SEED = 0x494e464cL;
    static final String REUSE_PROPERTY = "jvmos.dacapo.inflate.reuse";

    private int threads;
    private boolean reuse;
    private Corpus corpus;
    private byte[][] compressed;
    private long[] words;
    private long[] checksums;
    private final Check.Stable total = new Check.Stable("inflate text checksum");

    @Override
    public String name() {
        return "inflate";
    }

    @Override
    public void setup(Size size, Path workDir, int threads) throws Exception {
        this.threads = threads;
        this.reuse = Boolean.getBoolean(REUSE_PROPERTY);
        corpus = Corpus.generate(SEED, size.pick(2_000, 20_000, 60_000), 200, size.pick(4_000, 20_000, 40_000));
        int n = corpus.docs.length;
        compressed = new byte[n][];
        words = new long[n];
        checksums = new long[n];
        Deflater deflater = new Deflater(Deflater.BEST_SPEED);
        try {
            for (int d = 0; d < n; d++) {
                compressed[d] = deflate(deflater, text(d));
            }
        } finally {
            deflater.end();
        }
    }

    private byte[] text(int d) {
        StringBuilder sb = new StringBuilder();
        for (int t : corpus.docs[d]) {
            sb.append(corpus.vocabulary[t]).append(' ');
        }
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] deflate(Deflater deflater, byte[] text) {
        deflater.reset();
        deflater.setInput(text);
        deflater.finish();
        ByteArrayOutputStream out = new ByteArrayOutputStream(text.length / 2 + 64);
        byte[] buf = new byte[4096];
        while (!deflater.finished()) {
            out.write(buf, 0, deflater.deflate(buf));
        }
        return out.toByteArray();
    }

    /** Every document's figures are made again by each iteration: one it skipped fails. */
    @Override
    public void prepareIteration() {
        java.util.Arrays.fill(words, -1);
        java.util.Arrays.fill(checksums, -1);
    }

    @Override
    public void iterate() throws Exception {
        Workers.run(name(), threads, (worker, workers) -> {
            Inflater kept = reuse ? new Inflater() : null;
            byte[] buf = new byte[8192];
            try {
                for (int d = worker; d < compressed.length; d += workers) {
                    read(d, kept, buf);
                }
            } finally {
                if (kept != null) {
                    kept.end();
                }
            }
        });
    }

    /** One document decompressed through a stream, its words counted and its text checksummed. */
    private void read(int d, Inflater kept, byte[] buf) throws IOException {
        if (kept != null) {
            kept.reset();
        }
        ByteArrayInputStream raw = new ByteArrayInputStream(compressed[d]);
        CRC32 crc = new CRC32();
        long spaces = 0;
        try (InputStream in = kept == null ? new InflaterInputStream(raw) : new InflaterInputStream(raw, kept)) {
            for (int got; (got = in.read(buf)) > 0; ) {
                crc.update(buf, 0, got);
                for (int i = 0; i < got; i++) {
                    if (buf[i] == ' ') {
                        spaces++;
                    }
                }
            }
        }
        words[d] = spaces;
        checksums[d] = crc.getValue();
    }

    @Override
    public void validate() throws Exception {
        long sum = 0;
        for (int d = 0; d < words.length; d++) {
            Check.equal("inflate words of document " + d, corpus.docs[d].length, words[d]);
            sum = sum * 31 + checksums[d];
        }
        total.check(sum);
    }
}
