package org.jvmos.workloads;

import org.jvmos.workloads.Cli.Json;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

/**
 * The JVM's own record of its garbage collection so far (seed 000's Table 6: young and full
 * collections, their time, bytes allocated), read from the platform MXBeans that jstat also
 * reads: collections and their accumulated time per collector, classed young (G1 Young
 * Generation, PS Scavenge, Copy, ParNew), full (G1 Old Generation, PS MarkSweep,
 * MarkSweepCompact) or concurrent (G1's concurrent cycles, whose pauses are not full GCs);
 * allocated bytes from HotSpot's per-thread counters, summed by the JVM over every thread.
 * Shared by the ipc and matmul workloads.
 */
public final class GcRecord {
    /** The order of {@link #snapshot()}'s values, also the JSON keys of {@link #addTo}. */
    public static final String[] KEYS = {"gc_young_count", "gc_young_ms", "gc_full_count", "gc_full_ms",
        "gc_concurrent_count", "gc_concurrent_ms", "allocated_bytes"};

    private GcRecord() {
    }

    public static String kind(String collector) {
        String n = collector.toLowerCase(java.util.Locale.ROOT);
        if (n.contains("young") || n.contains("scavenge") || n.equals("copy") || n.contains("parnew")) {
            return "young";
        }
        if (n.contains("old") || n.contains("marksweep")) {
            return "full";
        }
        return "concurrent";
    }

    /** The JVM's collections so far, in the order of {@link #KEYS}: young, full and concurrent
     *  collections and their accumulated ms, then the bytes allocated; -1 for a figure the JVM
     *  cannot give. Under ZGC and Shenandoah the concurrent figures add the collectors'
     *  "Cycles" and "Pauses" beans (a cycle's pauses are counted beside it). */
    public static long[] snapshot() {
        long[] v = new long[KEYS.length];
        boolean[] unknown = new boolean[KEYS.length];
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            String k = kind(gc.getName());
            int i = k.equals("young") ? 0 : k.equals("full") ? 2 : 4;
            long count = gc.getCollectionCount();
            long ms = gc.getCollectionTime();
            // -1: the collector does not say; the sum is then unknown, not smaller
            unknown[i] |= count < 0;
            unknown[i + 1] |= ms < 0;
            v[i] += Math.max(0, count);
            v[i + 1] += Math.max(0, ms);
        }
        for (int i = 0; i < 6; i++) {
            if (unknown[i]) {
                v[i] = -1;
            }
        }
        v[6] = -1;
        java.lang.management.ThreadMXBean t = ManagementFactory.getThreadMXBean();
        if (t instanceof com.sun.management.ThreadMXBean) {
            com.sun.management.ThreadMXBean ht = (com.sun.management.ThreadMXBean) t;
            if (ht.isThreadAllocatedMemorySupported() && ht.isThreadAllocatedMemoryEnabled()) {
                v[6] = totalAllocatedBytes(ht);
            }
        }
        return v;
    }

    /** getTotalThreadAllocatedBytes (JDK 14+), looked up at run time so that this module
     * runs on JDK 11 too: -1 where the JVM does not have it. */
    private static long totalAllocatedBytes(com.sun.management.ThreadMXBean ht) {
        try {
            Object n = com.sun.management.ThreadMXBean.class
                    .getMethod("getTotalThreadAllocatedBytes").invoke(ht);
            return ((Long) n).longValue();
        } catch (ReflectiveOperationException | ClassCastException e) {
            return -1;
        }
    }

    /** Puts the values of {@code v} (a {@link #snapshot()}) under {@link #KEYS}. */
    public static Json put(Json json, long[] v) {
        for (int i = 0; i < KEYS.length; i++) {
            json.put(KEYS[i], v[i]);
        }
        return json;
    }

    /** Adds gc_young_count, gc_young_ms, gc_full_count, gc_full_ms, gc_concurrent_count,
     *  gc_concurrent_ms and allocated_bytes (-1 when the JVM cannot say) as of now. */
    public static Json addTo(Json json) {
        return put(json, snapshot());
    }
}
