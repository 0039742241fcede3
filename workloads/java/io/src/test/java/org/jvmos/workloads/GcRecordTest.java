package org.jvmos.workloads;

import org.jvmos.workloads.Cli.Json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class GcRecordTest {
    @Test
    void collectorsAreClassed() {
        assertEquals("young", GcRecord.kind("G1 Young Generation"));
        assertEquals("full", GcRecord.kind("G1 Old Generation"));
        assertEquals("concurrent", GcRecord.kind("G1 Concurrent GC"));
        assertEquals("young", GcRecord.kind("PS Scavenge"));
        assertEquals("full", GcRecord.kind("PS MarkSweep"));
        assertEquals("young", GcRecord.kind("Copy"));
        assertEquals("full", GcRecord.kind("MarkSweepCompact"));
    }

    @Test
    void allocationIsCounted() {
        byte[][] keep = new byte[64][];
        for (int i = 0; i < keep.length; i++) {
            keep[i] = new byte[1 << 16];
        }
        String json = GcRecord.addTo(new Json()).toString();
        assertTrue(json.contains("\"gc_young_count\":"), json);
        long allocated = Long.parseLong(json.replaceAll(".*\"allocated_bytes\":(-?\\d+).*", "$1"));
        assertTrue(allocated >= 64L << 16, json + " kept " + keep.length);
    }
}
