package org.jvmos.workloads.dacapo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;

/** The command line: listing, usage errors (exit 2), failures (exit 1) and the JSON result lines. */
class HarnessTest {

    @Test
    void listPrintsEveryBenchmarkOnItsOwnLine() {
        Run run = Run.of("--list");
        assertEquals(0, run.exit);
        assertArrayEquals(Benchmarks.names().toArray(new String[0]), run.outLines());
        for (String expected : new String[] {"h2", "luindex", "lusearch", "xalan", "fop", "pmd", "jython", "batik",
            "antlr"}) {
            assertTrue(Benchmarks.names().contains(expected), expected);
        }
    }

    @Test
    void unknownBenchmarkIsAUsageError() {
        Run run = Run.of("nosuchbench", "--size", "small");
        assertEquals(2, run.exit);
        assertEquals("", run.out);
        assertTrue(run.err.startsWith("error: unknown benchmark 'nosuchbench'"), run.err);
        assertEquals(1, run.err.strip().split("\n").length, run.err);
    }

    @Test
    void badOptionsAreUsageErrors() {
        assertEquals(2, Run.of("h2", "--size", "huge").exit);
        assertEquals(2, Run.of("h2", "--iterations", "0").exit);
        assertEquals(2, Run.of("h2", "--threads", "x").exit);
        assertEquals(2, Run.of("h2", "--iterations").exit);
        assertEquals(2, Run.of("h2", "--frobnicate").exit);
        assertEquals(2, Run.of().exit);
        assertTrue(Run.of("h2", "--size", "huge").err.startsWith("error: --size"));
    }

    @Test
    void failedValidationExitsOneWithReasonAndJson() {
        Run run = Run.with(name -> name.equals("broken") ? new Broken() : null, "broken", "--iterations", "3");
        assertEquals(1, run.exit);
        assertTrue(run.err.contains("===== jvmos-dacapo broken FAILED validation: broken: expected 1, got 2 ====="),
                run.err);
        String json = run.lastOutLine();
        assertTrue(json.contains("\"passed\":false"), json);
        assertTrue(json.contains("\"error\":\"broken: expected 1, got 2\""), json);
        assertTrue(json.contains("\"iteration_ns\":[]"), json);
    }

    @Test
    void severalBenchmarksGiveOneJsonLineEach() {
        Run run = Run.of("jython", "zxing", "--size=small", "--iterations=2");
        assertEquals(0, run.exit, run.err);
        String[] lines = run.outLines();
        assertEquals(2, lines.length, run.out);
        assertTrue(lines[0].contains("\"bench\":\"jython\""), lines[0]);
        assertTrue(lines[1].contains("\"bench\":\"zxing\""), lines[1]);
        assertTrue(lines[1].matches(".*\"iteration_ns\":\\[\\d+,\\d+\\].*"), lines[1]);
        assertTrue(lines[1].contains("\"java_version\":\"" + System.getProperty("java.version") + "\""), lines[1]);
    }

    @Test
    void quoteEscapesJson() {
        assertEquals("\"a\\\"b\\\\c\\u000a\"", Harness.quote("a\"b\\c\n"));
    }

    /** Validation that always fails, as a corrupted benchmark would. */
    private static final class Broken implements Benchmark {
        @Override
        public String name() {
            return "broken";
        }

        @Override
        public void setup(Size size, Path workDir, int threads) {
        }

        @Override
        public void iterate() {
        }

        @Override
        public void validate() throws ValidationException {
            Check.equal("broken", 1, 2);
        }
    }
}
