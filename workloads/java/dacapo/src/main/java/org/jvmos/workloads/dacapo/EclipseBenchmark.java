package org.jvmos.workloads.dacapo;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.eclipse.jdt.core.compiler.batch.BatchCompiler;

/**
 * The Eclipse Java compiler (ECJ, the compiler inside Eclipse JDT) compiling a generated source tree
 * to class files, single-threaded. Validation counts the class files, then loads every generated class
 * and calls its fingerprint(), whose value the generator knows: wrong bytecode cannot pass.
 */
final class EclipseBenchmark implements Benchmark {
    private static final long SEED = 0x45434a01L;

    private Path sourceRoot;
    private Path classesDir;
    private JavaSources sources;
    private boolean compiled;
    private String diagnostics;

    @Override
    public String name() {
        return "eclipse";
    }

    @Override
    public void setup(Size size, Path workDir, int threads) throws Exception {
        sourceRoot = workDir.resolve("src");
        classesDir = workDir.resolve("classes");
        sources = JavaSources.write(sourceRoot, SEED, size.pick(150, 2_000, 8_000), 12);
    }

    @Override
    public void prepareIteration() {
        WorkDir.delete(classesDir);
    }

    @Override
    public void iterate() {
        StringWriter messages = new StringWriter();
        // -17 with -proc:none: a plain Java 17 compile, no annotation processor discovery on the class path
        String[] args = {"-17", "-proc:none", "-encoding", "UTF-8", "-nowarn", "-d", classesDir.toString(),
            sourceRoot.toString()};
        compiled = BatchCompiler.compile(args, new PrintWriter(messages), new PrintWriter(messages), null);
        diagnostics = messages.toString();
    }

    @Override
    public void validate() throws Exception {
        Check.isTrue(compiled, "eclipse: compilation failed: " + firstLines(diagnostics));
        long classFiles;
        try (Stream<Path> walk = Files.walk(classesDir)) {
            classFiles = walk.filter(p -> p.toString().endsWith(".class")).count();
        }
        Check.equal("eclipse class files", sources.classFiles, classFiles);
        try (URLClassLoader loader = new URLClassLoader(new URL[] {classesDir.toUri().toURL()}, null)) {
            for (Map.Entry<String, Long> e : sources.fingerprints.entrySet()) {
                Object value = loader.loadClass(e.getKey()).getMethod("fingerprint").invoke(null);
                Check.equal("eclipse fingerprint() of " + e.getKey(), e.getValue(), value);
            }
        }
    }

    private static String firstLines(String text) {
        List<String> lines = new ArrayList<>(text.lines().limit(10).toList());
        return String.join(" | ", lines);
    }
}
