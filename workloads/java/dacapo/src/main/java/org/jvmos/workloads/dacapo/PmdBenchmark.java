package org.jvmos.workloads.dacapo;

import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

import net.sourceforge.pmd.PMDConfiguration;
import net.sourceforge.pmd.PmdAnalysis;
import net.sourceforge.pmd.lang.java.JavaLanguageModule;
import net.sourceforge.pmd.lang.rule.RulePriority;
import net.sourceforge.pmd.reporting.Report;
import net.sourceforge.pmd.reporting.RuleViolation;

/**
 * PMD 7 analysing a generated tree of Java sources with six whole rule categories (pmd-ruleset.xml), on
 * T threads.
 * The sources carry a known number of planted defects for four rules; validation requires exactly that
 * many violations of each, no processing error, and the same total in every iteration.
 */
final class PmdBenchmark implements Benchmark {
    private static final long SEED = 0x504d4401L;
    /** Loaded by PMD from the class path. */
    private static final String RULESET = "org/jvmos/workloads/dacapo/pmd-ruleset.xml";

    private int threads;
    private Path sourceRoot;
    private JavaSources sources;
    private Report report;
    private final Check.Stable totalViolations = new Check.Stable("pmd total violations");

    @Override
    public String name() {
        return "pmd";
    }

    @Override
    public void setup(Size size, Path workDir, int threads) throws Exception {
        this.threads = threads;
        sourceRoot = workDir.resolve("src");
        sources = JavaSources.write(sourceRoot, SEED, size.pick(30, 150, 600), 12);
    }

    @Override
    public void iterate() {
        PMDConfiguration config = new PMDConfiguration();
        config.setThreads(threads);
        // no cache: every iteration must analyse every file again
        config.setIgnoreIncrementalAnalysis(true);
        config.setDefaultLanguageVersion(JavaLanguageModule.getInstance().getVersion("17"));
        config.setMinimumPriority(RulePriority.LOW);
        config.addRuleSet(RULESET);
        config.addInputPath(sourceRoot);
        try (PmdAnalysis pmd = PmdAnalysis.create(config)) {
            report = pmd.performAnalysisAndCollectReport();
        }
    }

    @Override
    public void validate() throws Exception {
        validateReport(report, sources.planted);
        totalViolations.check(report.getViolations().size());
    }

    /** No errors, and exactly the planted number of violations for each planted rule. */
    static void validateReport(Report report, Map<String, Integer> planted) throws ValidationException {
        Check.isTrue(report != null, "pmd: no report");
        Check.isTrue(report.getConfigurationErrors().isEmpty(), "pmd configuration errors: "
                + report.getConfigurationErrors().size() + ", first: "
                + (report.getConfigurationErrors().isEmpty() ? "" : report.getConfigurationErrors().get(0).issue()));
        Check.isTrue(report.getProcessingErrors().isEmpty(), "pmd processing errors: "
                + report.getProcessingErrors().size() + ", first: "
                + (report.getProcessingErrors().isEmpty() ? "" : report.getProcessingErrors().get(0).getMsg()));
        Map<String, Integer> found = new TreeMap<>();
        for (String rule : planted.keySet()) {
            found.put(rule, 0);
        }
        for (RuleViolation v : report.getViolations()) {
            found.computeIfPresent(v.getRule().getName(), (k, n) -> n + 1);
        }
        Check.equal("pmd violations of the planted rules", planted, found);
        Check.atLeast("pmd total violations", planted.values().stream().mapToInt(Integer::intValue).sum() + 1,
                report.getViolations().size());
    }
}
