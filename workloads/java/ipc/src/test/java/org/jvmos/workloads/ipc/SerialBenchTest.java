package org.jvmos.workloads.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Every serialization format round-trips every graph. */
class SerialBenchTest {

    static String[] bench(String... args) {
        return IpcTest.run(new SerialBench(), args);
    }

    static double number(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":([0-9.]+)").matcher(json);
        assertTrue(m.find(), name + " in " + json);
        return Double.parseDouble(m.group(1));
    }

    @Test
    void everyFormatRoundTripsEveryGraph() {
        for (String format : SerialBench.FORMATS) {
            for (String graph : SerialBench.GRAPHS) {
                for (String size : new String[] {"5", "50"}) {
                    String[] r = bench("--format", format, "--graph", graph, "--size", size, "--iterations", "5",
                            "--warmup", "2");
                    String what = format + " " + graph + " " + size + ": " + r[2];
                    assertEquals("0", r[0], what);
                    String json = r[1].strip();
                    assertEquals(1, json.split("\n").length, json);
                    assertTrue(json.startsWith("{\"workload\":\"serial-bench\",\"format\":\"" + format
                            + "\",\"graph\":\"" + graph + "\",\"size\":" + size + ",\"iterations\":5,\"warmup\":2,"
                            + "\"validated\":7,"), json);
                    assertTrue(number(json, "bytes_per_object") > Integer.parseInt(size), json);
                    assertTrue(number(json, "ns_per_serialize") > 0, json);
                    assertTrue(number(json, "ns_per_deserialize") > 0, json);
                }
            }
        }
    }

    @Test
    void biggerGraphsGiveMoreBytes() {
        for (String format : SerialBench.FORMATS) {
            double small = number(bench("--format", format, "--graph", "nested", "--size", "5", "--iterations", "1",
                    "--warmup", "0")[1], "bytes_per_object");
            double large = number(bench("--format", format, "--graph", "nested", "--size", "500", "--iterations", "1",
                    "--warmup", "0")[1], "bytes_per_object");
            assertTrue(large > 10 * small, format + ": " + small + " -> " + large);
        }
    }

    @Test
    void badUsageExitsTwo() {
        String[][] bad = {
            {"--format", "json", "--graph", "vector"},
            {"--format", "kryo", "--graph", "tree"},
            {"--graph", "vector"},
            {"--format", "kryo", "--graph", "vector", "--iterations", "0"},
        };
        for (String[] args : bad) {
            String[] r = bench(args);
            assertEquals("2", r[0], String.join(" ", args));
            IpcTest.assertOneErrorLine(r[2]);
            assertEquals("", r[1]);
        }
    }
}
