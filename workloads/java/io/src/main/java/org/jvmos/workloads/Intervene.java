package org.jvmos.workloads;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

/**
 * The server of jvmos's interventions ({@code jvmos run interventions}): one request server whose
 * use of each OS service is chosen by an option, so that two runs differ in exactly one of them.
 *
 * <p>Protocol (127.0.0.1 only): the client sends one byte per request, {@code 'R'}, and reads
 * the response: a 16-byte header (the request's number, the checksum of its work) and
 * {@code --response} bytes of a fixed payload. {@code 'Q'} stops the server. A connection may
 * carry one request (the client closes it) or many (keep-alive). Every request does the same
 * work in every arm, so the answers (the client's checksum of the bytes it read) are equal.
 *
 * <p>What each option changes (arm A, the OS service used, and arm B, the intervention):
 * <ul>
 *   <li>{@code --threads per-connection|pool|virtual}: a native thread started per accepted
 *       connection, a fixed pool of {@code --pool} threads, or a virtual thread (JDK 21+)
 *   <li>keep-alive is the client's choice: a connection per request or one for all
 *   <li>{@code --buffer heap|direct}: the response written from a heap array (the JDK copies it
 *       into a temporary direct buffer before each write) or from one reused direct buffer
 *   <li>{@code --chunk BYTES}: the size of each write (the same bytes in more or fewer writes)
 *   <li>{@code --file-mode none|per-request|kept}: per request, 4 KiB read from {@code --file}
 *       through a RandomAccessFile opened and closed for the request, or one kept open per thread
 *   <li>{@code --inflate none|per-call|reused}: per request, {@code --inflate-count} times, a
 *       fixed 1 KiB block inflated by a new Inflater (zlib's stream, state and window malloc'ed
 *       and freed each time) or by one reused per thread
 *   <li>{@code --garbage-kb N}: per request, N KiB of short-lived arrays (young-generation pages
 *       first touched in the run unless {@code -XX:+AlwaysPreTouch} touched them at start-up),
 *       from the request numbered {@code --garbage-after N} on (default 0: every request), so
 *       that a settling load can warm the JIT without touching the heap
 * </ul>
 *
 * <pre>Intervene --port-file F [--threads ...] [--pool N] [--response B] [--chunk B]
 *           [--buffer heap|direct] [--file PATH --file-mode ...] [--inflate ...]
 *           [--garbage-kb N] [--garbage-after N] [--max-seconds S]</pre>
 */
public final class Intervene extends Workload {

    private static final int HEADER = 16;
    private static final int FILE_READ = 4096;
    private static final int INFLATED = 1024;

    Intervene() {
        super(List.of("port-file", "threads", "pool", "response", "chunk", "buffer", "file",
                      "file-mode", "inflate", "inflate-count", "garbage-kb", "garbage-after",
                      "max-seconds"),
              List.of());
    }

    public static void main(String[] args) {
        new Intervene().runAndExit(args);
    }

    private String threads;
    private int response;
    private int chunk;
    private boolean direct;
    private String fileMode;
    private File file;
    private long fileBlocks;
    private String inflate;
    private int inflateCount;
    private int garbageKb;
    private long garbageAfter;
    private byte[] payload;
    private byte[] compressed;
    private final AtomicLong served = new AtomicLong();
    private volatile boolean stopping;
    private ServerSocketChannel server;
    // a sink for the garbage, so that the JIT cannot drop the allocations
    private static volatile int sink;

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        String portFile = cli.string("port-file", null);
        threads = cli.string("threads", "pool");
        int pool = cli.intValue("pool", 2, 1, 1024);
        response = cli.intValue("response", 65536, 0, 64 << 20);
        chunk = cli.intValue("chunk", 8192, 1, 64 << 20);
        String buffer = cli.string("buffer", "heap");
        fileMode = cli.string("file-mode", "none");
        String path = cli.string("file", "");
        inflate = cli.string("inflate", "none");
        inflateCount = cli.intValue("inflate-count", 1, 1, 1024);
        garbageKb = cli.intValue("garbage-kb", 0, 0, 1 << 20);
        garbageAfter = cli.intValue("garbage-after", 0, 0, Integer.MAX_VALUE);
        int maxSeconds = cli.intValue("max-seconds", 600, 1, 86400);
        check("threads", threads, "per-connection", "pool", "virtual");
        check("buffer", buffer, "heap", "direct");
        check("file-mode", fileMode, "none", "per-request", "kept");
        check("inflate", inflate, "none", "per-call", "reused");
        direct = buffer.equals("direct");
        if (!fileMode.equals("none")) {
            file = new File(path);
            if (path.isEmpty() || file.length() < FILE_READ) {
                throw new Cli.UsageException("--file-mode " + fileMode + " needs --file naming a "
                        + "file of at least " + FILE_READ + " bytes");
            }
            fileBlocks = file.length() / FILE_READ;
        }
        payload = new byte[response];
        new Random(42).nextBytes(payload);
        compressed = compressedBlock();
        Method startVirtual = null;
        if (threads.equals("virtual")) {
            try {
                startVirtual = Thread.class.getMethod("startVirtualThread", Runnable.class);
            } catch (NoSuchMethodException e) {
                throw new Cli.UsageException("--threads virtual needs JDK 21 or later (this is "
                        + Cli.javaVersion() + ")");
            }
        }
        ExecutorService executor = threads.equals("pool") ? Executors.newFixedThreadPool(pool) : null;
        Thread guard = new Thread() {
            @Override
            public void run() {
                try {
                    Thread.sleep(maxSeconds * 1000L);
                } catch (InterruptedException e) {
                    return;
                }
                System.err.println("error: --max-seconds " + maxSeconds + " passed; stopping");
                Runtime.getRuntime().halt(1);
            }
        };
        guard.setDaemon(true);
        guard.start();
        try {
            server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 512);
            Cli.announce(((InetSocketAddress) server.getLocalAddress()).getPort(), portFile, out);
            while (!stopping) {
                SocketChannel c;
                try {
                    c = server.accept();
                } catch (IOException e) {
                    if (stopping) {
                        break;
                    }
                    throw e;
                }
                Runnable handler = new Handler(c);
                if (executor != null) {
                    executor.execute(handler);
                } else if (startVirtual != null) {
                    startVirtual.invoke(null, handler);
                } else {
                    new Thread(handler, "conn").start();
                }
            }
        } catch (IOException | ReflectiveOperationException e) {
            err.println("error: " + e);
            return 1;
        }
        if (executor != null) {
            executor.shutdown();
        }
        out.println(Cli.summary("intervene").put("requests", served.get())
                .put("threads", threads).put("buffer", buffer).put("chunk", chunk)
                .put("file_mode", fileMode).put("inflate", inflate).put("garbage_kb", garbageKb)
                .put("garbage_after", garbageAfter)
                .put("java_version", Cli.javaVersion()));
        return 0;
    }

    private static void check(String name, String v, String... allowed) throws Cli.UsageException {
        for (String a : allowed) {
            if (a.equals(v)) {
                return;
            }
        }
        throw new Cli.UsageException("--" + name + " must be one of " + String.join(", ", allowed)
                + ", got '" + v + "'");
    }

    /** A fixed, partly compressible 1 KiB block, deflated once at start-up. */
    private static byte[] compressedBlock() {
        byte[] plain = new byte[INFLATED];
        Random r = new Random(7);
        for (int i = 0; i < plain.length; i++) {
            plain[i] = (byte) ('a' + r.nextInt(8));
        }
        Deflater d = new Deflater();
        d.setInput(plain);
        d.finish();
        byte[] buf = new byte[INFLATED * 2];
        int n = d.deflate(buf);
        d.end();
        byte[] out = new byte[n];
        System.arraycopy(buf, 0, out, 0, n);
        return out;
    }

    /** A connection's buffers, borrowed from a shared pool and given back when it ends: made
     *  once per connection served at the same time, whatever thread serves it, so that the
     *  arms (a thread per connection or a pool, a connection per request or keep-alive) differ
     *  in their threads and sockets, not in these allocations. */
    private final class Buffers {
        final ByteBuffer req = ByteBuffer.allocateDirect(1);
        final byte[] heap;
        final ByteBuffer out;
        final byte[] header = new byte[HEADER];
        final ByteBuffer fileBuf = fileMode.equals("none") ? null : ByteBuffer.allocate(FILE_READ);
        final byte[] inflated = inflate.equals("none") ? null : new byte[INFLATED];
        RandomAccessFile keptFile;     // --file-mode kept: opened once, with these buffers
        Inflater keptInflater;         // --inflate reused: made once, with these buffers

        Buffers() {
            if (direct) {
                heap = null;
                out = ByteBuffer.allocateDirect(HEADER + response);
                out.position(HEADER);
                out.put(payload);
            } else {
                heap = new byte[HEADER + response];
                System.arraycopy(payload, 0, heap, HEADER, response);
                out = null;
            }
        }
    }

    private final java.util.concurrent.ConcurrentLinkedQueue<Buffers> buffers =
            new java.util.concurrent.ConcurrentLinkedQueue<>();

    /** One connection: requests until the client closes it or says Q. */
    private final class Handler implements Runnable {
        private final SocketChannel c;

        Handler(SocketChannel c) {
            this.c = c;
        }

        @Override
        public void run() {
            Buffers polled = buffers.poll();
            Buffers bufs = polled != null ? polled : new Buffers();
            ByteBuffer req = bufs.req;
            byte[] heap = bufs.heap;
            ByteBuffer out = bufs.out;
            byte[] header = bufs.header;
            try (SocketChannel ch = c) {
                ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
                while (true) {
                    req.clear();
                    if (ch.read(req) <= 0) {
                        return;
                    }
                    if (req.get(0) == 'Q') {
                        stopping = true;
                        server.close();
                        return;
                    }
                    long n = served.getAndIncrement();
                    long sum = work(n, bufs);
                    ByteBuffer.wrap(header).putLong(n).putLong(sum);
                    if (direct) {
                        out.clear();
                        out.put(header);
                        writeChunks(ch, out, HEADER + response);
                    } else {
                        System.arraycopy(header, 0, heap, 0, HEADER);
                        writeChunks(ch, heap, HEADER + response);
                    }
                }
            } catch (IOException | DataFormatException e) {
                if (!stopping) {
                    System.err.println("error: connection: " + e);
                }
            } finally {
                buffers.add(bufs);
            }
        }
    }

    /** The request's work beside its I/O; the checksum of what it read and inflated. */
    private long work(long n, Buffers bufs) throws IOException, DataFormatException {
        ByteBuffer fileBuf = bufs.fileBuf;
        byte[] inflated = bufs.inflated;
        CRC32 crc = new CRC32();
        if (fileBuf != null) {
            long pos = (n % fileBlocks) * FILE_READ;
            RandomAccessFile f = fileMode.equals("kept") ? bufs.keptFile : null;
            if (f == null) {
                f = new RandomAccessFile(file, "r");
                if (fileMode.equals("kept")) {
                    bufs.keptFile = f;
                }
            }
            try {
                f.seek(pos);
                f.readFully(fileBuf.array(), 0, FILE_READ);
            } finally {
                if (!fileMode.equals("kept")) {
                    f.close();
                }
            }
            crc.update(fileBuf.array(), 0, FILE_READ);
        }
        for (int i = 0; inflated != null && i < inflateCount; i++) {
            Inflater inf = inflate.equals("reused") ? bufs.keptInflater : null;
            if (inf == null) {
                inf = new Inflater();
                if (inflate.equals("reused")) {
                    bufs.keptInflater = inf;
                }
            } else {
                inf.reset();
            }
            inf.setInput(compressed);
            int got = inf.inflate(inflated);
            if (!inflate.equals("reused")) {
                inf.end();
            }
            crc.update(inflated, 0, got);
        }
        if (garbageKb > 0 && n >= garbageAfter) {
            int s = 0;
            for (int k = 0; k < garbageKb; k += 64) {
                byte[] g = new byte[Math.min(64, garbageKb - k) * 1024];
                g[(int) (n % g.length)] = 1;
                s += g.length;
            }
            sink = s;
        }
        return crc.getValue();
    }

    /** The heap array (header filled in), in writes of at most --chunk bytes: the JDK copies
     *  each one into a temporary direct buffer before the write. */
    private void writeChunks(SocketChannel ch, byte[] heap, int total) throws IOException {
        int off = 0;
        while (off < total) {
            int n = Math.min(chunk, total - off);
            ByteBuffer b = ByteBuffer.wrap(heap, off, n);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            off += n;
        }
    }

    /** The direct buffer (header filled in), in writes of at most --chunk bytes. */
    private void writeChunks(SocketChannel ch, ByteBuffer out, int total) throws IOException {
        int off = 0;
        while (off < total) {
            int n = Math.min(chunk, total - off);
            ByteBuffer b = out.duplicate();
            b.limit(off + n).position(off);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            off += n;
        }
    }
}
