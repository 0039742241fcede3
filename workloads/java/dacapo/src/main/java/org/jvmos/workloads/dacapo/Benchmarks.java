package org.jvmos.workloads.dacapo;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/** The suite: benchmark name to a factory, in the order --list prints them. */
public final class Benchmarks {
    private static final Map<String, Supplier<Benchmark>> ALL = new LinkedHashMap<>();

    static {
        ALL.put("antlr", AntlrBenchmark::new);
        ALL.put("batik", BatikBenchmark::new);
        ALL.put("eclipse", EclipseBenchmark::new);
        ALL.put("fop", FopBenchmark::new);
        ALL.put("h2", H2Benchmark::new);
        ALL.put("inflate", InflateBenchmark::new);
        ALL.put("jython", JythonBenchmark::new);
        ALL.put("luindex", LuindexBenchmark::new);
        ALL.put("lusearch", LusearchBenchmark::new);
        ALL.put("pmd", PmdBenchmark::new);
        ALL.put("xalan", XalanBenchmark::new);
        ALL.put("zxing", ZxingBenchmark::new);
    }

    private Benchmarks() {
    }

    public static Set<String> names() {
        return Collections.unmodifiableSet(ALL.keySet());
    }

    /** Returns null for an unknown name. */
    public static Benchmark create(String name) {
        Supplier<Benchmark> factory = ALL.get(name);
        return factory == null ? null : factory.get();
    }
}
