package org.jvmos.workloads.dacapo;

import java.io.InputStream;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.python.core.PyCode;
import org.python.core.PyObject;
import org.python.core.PyStringMap;
import org.python.util.PythonInterpreter;

/**
 * A Python 2.7 program (workload.py: n-queens, a sieve, a generator-task scheduler passing packets,
 * word counting with exceptions) run on Jython, which compiles it to JVM bytecode. The script's result
 * line is compared with the same figures computed here in Java.
 */
final class JythonBenchmark implements Benchmark {
    private static final Map<Integer, Integer> QUEEN_SOLUTIONS = Map.of(8, 92, 10, 724, 11, 2_680);
    private static final Map<Integer, Integer> PRIMES_BELOW = Map.of(100_000, 9_592, 1_000_000, 78_498,
            2_000_000, 148_933);
    private static final String[] SYLLABLES = {"ka", "lo", "mi", "ne", "ru", "to", "sa", "vi", "da", "po", "ze",
        "fu", "ga", "hi", "jo", "be"};
    private static boolean initialized;

    private PythonInterpreter interpreter;
    private PyCode program;
    private Map<String, Integer> parameters;
    private String expected;
    private String result;

    @Override
    public String name() {
        return "jython";
    }

    @Override
    public void setup(Size size, Path workDir, int threads) throws Exception {
        initialize(workDir);
        parameters = Map.of(
                "QUEENS", size.pick(8, 10, 11),
                "PRIME_LIMIT", size.pick(100_000, 1_000_000, 2_000_000),
                "PRODUCERS", size.pick(4, 8, 16),
                "PACKETS", size.pick(5_000, 50_000, 100_000),
                "WORDS", size.pick(50_000, 800_000, 2_500_000));
        expected = expectedResult();
        interpreter = new PythonInterpreter();
        // the script prints nothing, but Jython's own warnings must not reach the harness's stdout
        interpreter.setOut(new StringWriter());
        interpreter.setErr(new StringWriter());
        String source;
        try (InputStream in = JythonBenchmark.class.getResourceAsStream("workload.py")) {
            source = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        program = interpreter.compile(source, "workload.py");
    }

    /** Jython's registry can be set up once per JVM; a second jython run in one harness reuses it. */
    private static synchronized void initialize(Path workDir) {
        if (initialized) {
            return;
        }
        Properties props = new Properties();
        // no site-packages scan and no package cache written under the user's home
        props.setProperty("python.import.site", "false");
        props.setProperty("python.cachedir.skip", "true");
        PythonInterpreter.initialize(System.getProperties(), props, new String[] {"workload.py"});
        initialized = true;
    }

    @Override
    public void iterate() {
        // a fresh module namespace each time: the module body runs again, as a new script run would
        interpreter.setLocals(new PyStringMap());
        parameters.forEach(interpreter::set);
        interpreter.exec(program);
        PyObject run = interpreter.get("run");
        result = run.__call__().toString();
    }

    @Override
    public void validate() throws Exception {
        Check.equal("jython result", expected, result);
    }

    private String expectedResult() {
        int queens = parameters.get("QUEENS");
        int limit = parameters.get("PRIME_LIMIT");
        int producers = parameters.get("PRODUCERS");
        int packets = parameters.get("PACKETS");
        long sum = 0;
        for (int p = 0; p < producers; p++) {
            long state = 1000 + p;
            for (int k = 0; k < packets; k++) {
                state = lcg(state);
                sum += state % 1000;
            }
        }
        int words = parameters.get("WORDS");
        Map<String, Integer> counts = new HashMap<>();
        long state = 42;
        for (int i = 0; i < words; i++) {
            state = lcg(state);
            String w = SYLLABLES[(int) (state % 16)] + SYLLABLES[(int) ((state >> 4) % 16)]
                    + SYLLABLES[(int) ((state >> 8) % 4)];
            counts.merge(w, 1, Integer::sum);
        }
        List<Map.Entry<String, Integer>> ranked = new ArrayList<>(counts.entrySet());
        ranked.sort((a, b) -> a.getValue().equals(b.getValue()) ? a.getKey().compareTo(b.getKey())
                : Integer.compare(b.getValue(), a.getValue()));
        StringBuilder top = new StringBuilder();
        for (int i = 0; i < Math.min(10, ranked.size()); i++) {
            top.append(i == 0 ? "" : ",").append(ranked.get(i).getKey()).append(':').append(ranked.get(i).getValue());
        }
        return "queens=" + QUEEN_SOLUTIONS.get(queens) + ";primes=" + PRIMES_BELOW.get(limit) + ";sum=" + sum
                + ";hops=" + (long) producers * packets + ";switched=True;distinct=" + counts.size()
                + ";failures=" + (words + 6) / 7 + ";top=" + top;
    }

    private static long lcg(long state) {
        return (state * 1103515245L + 12345L) & 0x7fffffffL;
    }
}
