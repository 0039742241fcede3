package org.jvmos.workloads;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class SamplerLoadTest {

    private static Run withInput(String input, String... args) {
        InputStream saved = System.in;
        System.setIn(new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8)));
        try {
            return Run.of(new SamplerLoad(), args);
        } finally {
            System.setIn(saved);
        }
    }

    @Test
    void answersEachSegmentAndSumsTheUnits() {
        Run r = withInput("run 3\nrun 2\nquit\n", "--depth", "8", "--warmup-units", "1");
        assertEquals(0, r.rc, r::toString);
        String[] l = r.lines();
        assertTrue(l[0].startsWith("{\"ready\":true,\"depth\":8"), r::toString);
        assertTrue(l[1].startsWith("{\"units\":3,\"elapsed_ns\":"), r::toString);
        assertTrue(l[2].startsWith("{\"units\":2,"), r::toString);
        assertEquals(5, r.num("ops"));
        assertEquals(2, r.num("segments"));
        assertTrue(r.lastLine().contains("\"stopped_by\":\"quit\""), r::toString);
    }

    @Test
    void stopsAtItsUnitBoundAndRefusesBadCommands() {
        Run r = withInput("run 3\nrun 3\n", "--warmup-units", "0", "--max-units", "4");
        assertEquals(0, r.rc, r::toString);
        assertEquals(3, r.num("ops"));
        assertTrue(r.lastLine().contains("\"stopped_by\":\"max-units\""), r::toString);
        Run bad = withInput("go\n", "--warmup-units", "0");
        assertEquals(2, bad.rc, bad::toString);
        assertTrue(bad.err.contains("unknown command"), bad::toString);
    }
}
