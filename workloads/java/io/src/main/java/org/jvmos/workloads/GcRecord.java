package org.jvmos.workloads.ipc;

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
 */
final class GcRecord {
    private GcRecord() {
    }

    static String kind(String collector) {
        String n = collector.toLowerCase(java.util.Locale.ROOT);
        if (n.contains("young") || n.contains("scavenge") || n.equals("copy") || n.contains("parnew")) {
            return "young";
        }
        if (n.contains("old") || n.contains("marksweep")) {
            return "full";
        }
        return "concurrent";
    }

    /** Adds gc_young_count, gc_young_ms, gc_full_count, gc_full_ms, gc_concurrent_count,
     *  gc_concurrent_ms and allocated_bytes (-1 when the JVM cannot say). */
    static Json addTo(Json json) {
        long[] count = new long[3];
        long[] ms = new long[3];
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            String k = kind(gc.getName());
            int i = k.equals("young") ? 0 : k.equals("full") ? 1 : 2;
            count[i] += Math.max(0, gc.getCollectionCount());
            ms[i] += Math.max(0, gc.getCollectionTime());
        }
        long allocated = -1;
        java.lang.management.ThreadMXBean t = ManagementFactory.getThreadMXBean();
        if (t instanceof com.sun.management.ThreadMXBean) {
            com.sun.management.ThreadMXBean ht = (com.sun.management.ThreadMXBean) t;
            if (ht.isThreadAllocatedMemorySupported() && ht.isThreadAllocatedMemoryEnabled()) {
                allocated = ht.getTotalThreadAllocatedBytes();
            }
        }
        return json.put("gc_young_count", count[0]).put("gc_young_ms", ms[0])
                .put("gc_full_count", count[1]).put("gc_full_ms", ms[1])
                .put("gc_concurrent_count", count[2]).put("gc_concurrent_ms", ms[2])
                .put("allocated_bytes", allocated);
    }
}
