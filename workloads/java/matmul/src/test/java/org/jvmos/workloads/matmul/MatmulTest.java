package org.jvmos.workloads.matmul;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The manager in process, its k workers spawned as JVMs (small sizes: the build machine is shared). */
class MatmulTest {

    /** Runs the manager in process: {rc, stdout, stderr}. */
    static String[] run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = new Matmul().run(args, new PrintStream(out, true), new PrintStream(err, true));
        return new String[] {Integer.toString(rc), out.toString(StandardCharsets.UTF_8),
            err.toString(StandardCharsets.UTF_8)};
    }

    static long field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":(\\d+)").matcher(json);
        assertTrue(m.find(), name + " in " + json);
        return Long.parseLong(m.group(1));
    }

    static void assertOneErrorLine(String err) {
        assertTrue(err.startsWith("error: "), err);
        assertEquals(1, err.strip().split("\n").length, err);
    }

    @ParameterizedTest
    @CsvSource({"rmi-serializable,spa", "rmi-serializable,mca", "rmi-externalizable,spa",
        "rmi-externalizable,mca", "socket,spa", "socket,mca", "datagram,spa", "datagram,mca"})
    @Timeout(120)
    void everyMechanismAndAlgorithmMultipliesCorrectly(String mechanism, String algorithm) {
        String[] r = run("--mechanism", mechanism, "--algorithm", algorithm, "--n", "40", "--k", "2",
                "--seed", "7", "--max-seconds", "60");
        assertEquals("0", r[0], r[2]);
        String json = r[1].strip();
        assertTrue(json.contains("\"validated\":true"), json);
        assertTrue(json.contains("\"mechanism\":\"" + mechanism + "\""), json);
        // SPA: one call each way per worker; MCA on a 1 x 2 grid: the column shifts only
        long expected = algorithm.equals("spa") ? 4 : 2 + 2 * (1 + 39);
        assertEquals(expected, field(json, "calls"), json);
        // each JVM's own GC record: the manager's and one per worker; every JVM allocated at
        // least the matrices it received (a 40 x 40 block of ints, 6,400 bytes)
        assertTrue(field(json, "manager_allocated_bytes") > 40 * 40 * 4, json);
        String workers = json.replaceAll(".*\"workers_allocated_bytes\":\\[([^\\]]*)\\].*", "$1");
        String[] each = workers.split(",");
        assertEquals(2, each.length, json);
        for (String w : each) {
            assertTrue(Long.parseLong(w.trim()) > 40 * 40 * 4, json);
        }
        assertTrue(json.contains("\"workers_gc_young_count\":["), json);
    }

    @Test
    @Timeout(120)
    void mcaOnASquareGridMakesTheSeedsNumberOfCalls() {
        String[] r = run("--mechanism", "socket", "--algorithm", "mca", "--n", "12", "--k", "4",
                "--repeat", "2", "--max-seconds", "60");
        assertEquals("0", r[0], r[2]);
        // per repetition 2k + 2k(n-1)
        assertEquals(2 * (8 + 8 * 11), field(r[1], "calls"), r[1]);
    }

    @Test
    @Timeout(120)
    void datagramLossIsRepairedByRetransmission() {
        String[] r = run("--mechanism", "datagram", "--algorithm", "mca", "--n", "40", "--k", "2",
                "--drop-every", "5", "--max-seconds", "60");
        assertEquals("0", r[0], r[2]);
        assertTrue(r[1].contains("\"validated\":true"), r[1]);
        assertTrue(field(r[1], "retransmissions") > 0, r[1]);
    }

    @Test
    @Timeout(60)
    void aWorkerThatNeverStartsIsOneClearErrorInBoundedTime() {
        long t0 = System.nanoTime();
        String[] r = run("--mechanism", "socket", "--algorithm", "spa", "--n", "10", "--k", "2",
                "--worker-start-timeout", "2", "--worker-start-delay-ms", "60000", "--max-seconds", "30");
        assertEquals("1", r[0], r[2]);
        assertOneErrorLine(r[2]);
        assertTrue(r[2].contains("did not announce its port within 2 s"), r[2]);
        assertTrue(System.nanoTime() - t0 < 20_000_000_000L);
    }

    @Test
    void sequentialNeedsNoWorkers() {
        String[] r = run("--algorithm", "sequential", "--n", "30");
        assertEquals("0", r[0], r[2]);
        assertTrue(r[1].contains("\"validated\":true"), r[1]);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--mechanism|carrier-pigeon|unknown mechanism",
        "--algorithm|strassen|unknown algorithm",
        "--n|0|--n must be in",
        "--n|-3|--n must be in",
        "--k|0|--k must be in",
        "--drop-every|1|--drop-every"})
    void badArgumentsAreOneErrorLineAndExit2(String option, String value, String message) {
        String[] r = run(option, value);
        assertEquals("2", r[0], r[2]);
        assertOneErrorLine(r[2]);
        assertTrue(r[2].contains(message), r[2]);
        assertEquals("", r[1]);
    }

    @Test
    void mcaNeedsNDivisibleByTheGrid() {
        String[] r = run("--algorithm", "mca", "--k", "4", "--n", "11");
        assertEquals("2", r[0], r[2]);
        assertOneErrorLine(r[2]);
        assertTrue(r[2].contains("2x2"), r[2]);
    }

    @Test
    void theSequentialLoopAgreesWithTheReferenceAndTheGridsAreAsDocumented() {
        SplittableRandom rng = new SplittableRandom(3);
        int n = 12;
        int[] a = Matrices.random(n, rng);
        int[] b = Matrices.random(n, rng);
        long[] expected = Matrices.reference(a, b, n);
        assertEquals(null, Matrices.mismatch(Matrices.multiply(a, b, n), expected, n));
        assertEquals(2, Mca.grid(6)[0]);
        assertEquals(3, Mca.grid(6)[1]);
        assertEquals(1, Mca.grid(2)[0]);
        assertEquals(2, Mca.grid(4)[0]);
    }
}
