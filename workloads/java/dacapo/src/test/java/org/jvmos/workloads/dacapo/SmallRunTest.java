package org.jvmos.workloads.dacapo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Every benchmark of the suite runs one small iteration through the harness and passes its check. */
class SmallRunTest {

    static Stream<String> benchmarks() {
        return Benchmarks.names().stream();
    }

    @ParameterizedTest
    @MethodSource("benchmarks")
    void passesOneSmallIteration(String bench) {
        Run run = Run.of(bench, "--size", "small", "--iterations", "1", "--threads", "2");
        assertEquals(0, run.exit, () -> bench + " failed:\n" + run.err);
        String json = run.lastOutLine();
        assertTrue(json.startsWith("{\"workload\":\"dacapo\",\"bench\":\"" + bench + "\",\"size\":\"small\""), json);
        assertTrue(json.contains("\"iterations\":1,\"iteration_ns\":["), json);
        assertTrue(json.contains("\"passed\":true"), json);
        assertTrue(run.err.contains("===== jvmos-dacapo " + bench + " starting ====="), run.err);
        assertTrue(run.err.contains("===== jvmos-dacapo " + bench + " PASSED in "), run.err);
    }
}
