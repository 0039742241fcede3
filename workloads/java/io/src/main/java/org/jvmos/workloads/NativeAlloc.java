package org.jvmos.workloads;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * Known native and heap allocation, for checking the memory layer.
 *
 * <p>{@code --direct N}: allocates N direct ByteBuffers of {@code --size} bytes and keeps them
 * (each one is an Unsafe.allocateMemory, i.e. one os::malloc, i.e. one libc malloc).
 * {@code --heap-mb M}: then allocates and keeps M MiB of byte arrays, so a JVM started with a
 * small -Xms must grow its heap (the collector commits memory with mmap).
 *
 * <pre>NativeAlloc --direct 10000 --size 1024 [--heap-mb 256]</pre>
 */
public final class NativeAlloc extends Workload {

    NativeAlloc() {
        super(List.of("direct", "size", "heap-mb"), List.of());
    }

    public static void main(String[] args) {
        new NativeAlloc().runAndExitOnFailure(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        int direct = cli.intValue("direct", 10_000, 0, 10_000_000);
        int size = cli.intValue("size", 1024, 1, 1 << 20);
        int heapMb = cli.intValue("heap-mb", 0, 0, 1 << 16);
        long t0 = System.nanoTime();
        List<ByteBuffer> buffers = new ArrayList<>(direct);
        long checksum = 0;
        long tLoop;
        try {
            for (int i = 0; i < direct; i++) {
                ByteBuffer b = ByteBuffer.allocateDirect(size);
                b.put(0, (byte) i);
                buffers.add(b);
            }
            List<byte[]> heap = new ArrayList<>();
            for (int i = 0; i < heapMb; i++) {
                byte[] mb = new byte[1 << 20];
                mb[i % mb.length] = 1;
                heap.add(mb);
            }
            tLoop = System.nanoTime();
            for (ByteBuffer b : buffers) {
                checksum += b.get(0);
            }
            checksum += heap.size();
        } catch (OutOfMemoryError e) {
            err.println("error: " + e.getMessage() + " (raise -Xmx or -XX:MaxDirectMemorySize)");
            return 1;
        }
        out.println(Cli.summary("native-alloc")
                .put("direct_buffers", direct)
                .put("size", size)
                .put("heap_mb", heapMb)
                .put("checksum", checksum)
                .put("elapsed_ns", tLoop - t0)
                // System.nanoTime is CLOCK_MONOTONIC on Linux: comparable with other processes'
                .put("loop_start_ns", t0)
                .put("loop_end_ns", tLoop)
                .put("java_version", Cli.javaVersion()));
        return 0;
    }
}
