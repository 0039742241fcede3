package org.jvmos.workloads;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(20)
class IoWorkloadsTest {

    @Test
    void socketStreamDeliversEveryByte() {
        Run r = Run.of(new SocketStream(), "--writes", "2000", "--size", "100");
        assertEquals(0, r.rc, r::toString);
        assertTrue(r.lastLine().startsWith("{\"workload\":\"socket-stream\",\"mode\":\"stream\""), r::toString);
        assertEquals(2000, r.num("ops"));
        assertEquals(200_000, r.num("bytes"));
        assertTrue(r.num("elapsed_ns") > 0);
        assertTrue(r.lastLine().contains("\"java_version\":\""), r::toString);
    }

    @Test
    void socketStreamNioDeliversEveryByte() {
        Run r = Run.of(new SocketStream(), "--writes", "1500", "--size", "333", "--nio");
        assertEquals(0, r.rc, r::toString);
        assertTrue(r.lastLine().contains("\"mode\":\"nio\""), r::toString);
        assertEquals(1500L * 333, r.num("bytes"));
    }

    @Test
    void blockingIoWritesExactlyNTimesS(@TempDir Path tmp) throws Exception {
        Path f = tmp.resolve("out.bin");
        Run r = Run.of(new BlockingIo(), "--iterations", "1000", "--size", "10", "--target", f.toString());
        assertEquals(0, r.rc, r::toString);
        assertEquals(10_000, Files.size(f));
        assertEquals(1000, r.num("ops"));
        assertEquals(10_000, r.num("bytes"));
    }

    @Test
    void blockingIoStopsAtItsStopFile(@TempDir Path tmp) throws Exception {
        Path stop = tmp.resolve("stop");
        Files.createFile(stop);
        // an existing stop file ends an otherwise hour-long loop at its first check
        long t0 = System.nanoTime();
        Run r = Run.of(new BlockingIo(), "--iterations", "100000000000", "--seconds", "3600",
                "--target", "/dev/null", "--stop-file", stop.toString());
        assertEquals(0, r.rc, r::toString);
        assertEquals(0, r.num("ops"));
        assertTrue(System.nanoTime() - t0 < 60_000_000_000L);
    }

    @Test
    void randomRwIsDeterministicAndCleansUp(@TempDir Path tmp) throws Exception {
        Path f = tmp.resolve("rw.dat");
        String[] args = {"--ops", "500", "--size", "4096", "--file", f.toString(), "--seed", "3"};
        Run a = Run.of(new RandomRw(), args);
        Run b = Run.of(new RandomRw(), args);
        assertEquals(0, a.rc, a::toString);
        assertFalse(Files.exists(f), "file must be deleted without --keep");
        assertEquals(500, a.num("reads") + a.num("writes"));
        assertEquals(a.num("reads"), b.num("reads"));
        assertEquals(a.num("checksum"), b.num("checksum"));

        Run k = Run.of(new RandomRw(), "--ops", "10", "--size", "512", "--file", f.toString(), "--seed", "3", "--keep");
        assertEquals(0, k.rc, k::toString);
        assertEquals(RandomRw.FILE_SIZE, Files.size(f));
    }

    @Test
    void copyCalibratePrintsOnlyJsonLines() {
        Run r = Run.of(new CopyCalibrate(), "--sizes", "8,1024", "--millis-per-size", "20", "--trials", "2");
        assertEquals(0, r.rc, r::toString);
        String[] lines = r.lines();
        assertEquals(3, lines.length, r::toString);
        assertTrue(lines[0].matches("\\{\"size\":8,\"ns_per_copy\":\\[[0-9.]+,[0-9.]+\\]\\}"), lines[0]);
        assertTrue(lines[1].startsWith("{\"size\":1024,\"ns_per_copy\":["), lines[1]);
        assertTrue(lines[2].startsWith("{\"workload\":\"copy-calibrate\""), lines[2]);
        assertTrue(lines[2].contains("\"sink\":"), lines[2]);
    }

    @Test
    void badArgumentsExitWithStatus2() {
        Run unknown = Run.of(new BlockingIo(), "--iterations", "5", "--bogus", "1");
        assertEquals(2, unknown.rc);
        assertEquals("error: unknown option --bogus", unknown.err.strip());
        assertEquals("", unknown.out);

        Run badNumber = Run.of(new SocketStream(), "--writes", "12x");
        assertEquals(2, badNumber.rc);
        assertTrue(badNumber.err.startsWith("error: bad number for --writes"), badNumber::toString);

        assertEquals(2, Run.of(new RandomRw(), "--ops", "5").rc, "--file is required");
        assertEquals(2, Run.of(new RandomRw(), "--file", "x", "--size", "0").rc);
        assertEquals(2, Run.of(new CopyCalibrate(), "--sizes", "8,,16").rc);
        assertEquals(2, Run.of(new Java2dDemo(), "--frames").rc);
        assertEquals(2, Run.of(new SocketStream(), "stray").rc);
    }
}
