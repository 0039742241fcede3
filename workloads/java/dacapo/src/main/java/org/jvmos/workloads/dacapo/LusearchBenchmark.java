package org.jvmos.workloads.dacapo;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.queryparser.classic.QueryParser;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.TopScoreDocCollectorManager;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;

/**
 * Multi-threaded Lucene search over an index of the generated corpus built in setup, as DaCapo's
 * lusearch: each thread parses its share of the queries with the classic QueryParser, collects the top
 * ten hits and loads their stored fields. Every query's exact hit count is computed beforehand from
 * the corpus itself, so a wrong index or a wrong search fails validation.
 */
final class LusearchBenchmark implements Benchmark {
    private static final long SEED = 0x4c55_5345L;
    private static final int TOP = 10;

    private int threads;
    private Corpus corpus;
    private Directory directory;
    private DirectoryReader reader;
    private IndexSearcher searcher;
    private final List<String> queries = new ArrayList<>();
    private final List<int[]> mustContain = new ArrayList<>();
    private long[] expectedHits;
    private long[] hits;
    private long[] topChecksums;
    private final Check.Stable topHits = new Check.Stable("lusearch top hits");

    @Override
    public String name() {
        return "lusearch";
    }

    @Override
    public void setup(Size size, Path workDir, int threads) throws Exception {
        this.threads = threads;
        corpus = Corpus.generate(SEED, size.pick(3_000, 20_000, 60_000), 200, size.pick(8_000, 30_000, 60_000));
        Path indexDir = workDir.resolve("index");
        CorpusIndexer.index(corpus.writeFiles(workDir.resolve("corpus")), indexDir);
        directory = FSDirectory.open(indexDir);
        reader = DirectoryReader.open(directory);
        searcher = new IndexSearcher(reader);
        makeQueries(size.pick(3_000, 20_000, 80_000));
        hits = new long[queries.size()];
        topChecksums = new long[queries.size()];
    }

    /** A seeded mix of term, conjunction, disjunction, phrase and prefix queries with known hit counts. */
    private void makeQueries(int count) {
        Random random = new Random(SEED);
        String[] vocabulary = corpus.vocabulary;
        expectedHits = new long[count];
        for (int q = 0; q < count; q++) {
            int kind = random.nextInt(100);
            int a = pickWord(random);
            int b = pickWord(random);
            int[] required = {};
            if (kind < 35) {
                queries.add(vocabulary[a]);
                expectedHits[q] = corpus.postings(a).length;
                required = new int[] {a};
            } else if (kind < 60) {
                queries.add("+" + vocabulary[a] + " +" + vocabulary[b]);
                expectedHits[q] = intersect(corpus.postings(a), corpus.postings(b)).length;
                required = new int[] {a, b};
            } else if (kind < 75) {
                queries.add(vocabulary[a] + " " + vocabulary[b]);
                expectedHits[q] = corpus.postings(a).length + corpus.postings(b).length
                        - intersect(corpus.postings(a), corpus.postings(b)).length;
            } else if (kind < 90) {
                // a phrase that occurs somewhere: two adjacent tokens of a random document
                int[] doc = corpus.docs[random.nextInt(corpus.docs.length)];
                int at = random.nextInt(doc.length - 1);
                queries.add("\"" + vocabulary[doc[at]] + " " + vocabulary[doc[at + 1]] + "\"");
                expectedHits[q] = Arrays.stream(intersect(corpus.postings(doc[at]), corpus.postings(doc[at + 1])))
                        .filter(d -> corpus.hasBigram(d, doc[at], doc[at + 1])).count();
                required = new int[] {doc[at], doc[at + 1]};
            } else {
                String prefix = vocabulary[a].substring(0, 3);
                queries.add(prefix + "*");
                boolean[] matched = new boolean[corpus.docs.length];
                for (int w = 0; w < vocabulary.length; w++) {
                    if (vocabulary[w].startsWith(prefix)) {
                        for (int d : corpus.postings(w)) {
                            matched[d] = true;
                        }
                    }
                }
                long n = 0;
                for (boolean m : matched) {
                    n += m ? 1 : 0;
                }
                expectedHits[q] = n;
            }
            mustContain.add(required);
        }
    }

    /** Half the words by corpus frequency (frequent ones), half uniformly (mostly rare ones). */
    private int pickWord(Random random) {
        int[] doc = corpus.docs[random.nextInt(corpus.docs.length)];
        return random.nextBoolean() ? doc[random.nextInt(doc.length)] : random.nextInt(corpus.vocabulary.length);
    }

    private static int[] intersect(int[] x, int[] y) {
        int[] out = new int[Math.min(x.length, y.length)];
        int i = 0;
        int j = 0;
        int n = 0;
        while (i < x.length && j < y.length) {
            if (x[i] < y[j]) {
                i++;
            } else if (x[i] > y[j]) {
                j++;
            } else {
                out[n++] = x[i];
                i++;
                j++;
            }
        }
        return Arrays.copyOf(out, n);
    }

    @Override
    public void prepareIteration() {
        Arrays.fill(hits, -1);
    }

    @Override
    public void iterate() throws Exception {
        Workers.run(name(), threads, (worker, count) -> {
            // QueryParser is not thread-safe; the searcher is.
            QueryParser parser = new QueryParser(CorpusIndexer.BODY, new StandardAnalyzer());
            StoredFields stored = searcher.storedFields();
            for (int q = worker; q < queries.size(); q += count) {
                Query query = parser.parse(queries.get(q));
                // Integer.MAX_VALUE: count every hit instead of stopping at a lower bound
                TopDocs top = searcher.search(query, new TopScoreDocCollectorManager(TOP, null, Integer.MAX_VALUE));
                long checksum = 0;
                for (ScoreDoc sd : top.scoreDocs) {
                    Document doc = stored.document(sd.doc);
                    int num = doc.getField(CorpusIndexer.NUM).numericValue().intValue();
                    for (int word : mustContain.get(q)) {
                        Check.isTrue(Arrays.binarySearch(corpus.postings(word), num) >= 0, "lusearch query '"
                                + queries.get(q) + "' returned document " + num + " without '"
                                + corpus.vocabulary[word] + "'");
                    }
                    checksum = checksum * 31 + num + doc.get(CorpusIndexer.TITLE).length();
                }
                hits[q] = top.totalHits.value;
                topChecksums[q] = checksum;
            }
        });
    }

    @Override
    public void validate() throws Exception {
        long matching = 0;
        long checksum = 0;
        for (int q = 0; q < hits.length; q++) {
            Check.equal("lusearch hits of query " + q + " '" + queries.get(q) + "'", expectedHits[q], hits[q]);
            matching += hits[q] > 0 ? 1 : 0;
            checksum = checksum * 1_000_003L + topChecksums[q];
        }
        Check.atLeast("lusearch queries with hits", hits.length / 2, matching);
        topHits.check(checksum);
    }

    @Override
    public void teardown() throws Exception {
        if (reader != null) {
            reader.close();
        }
        if (directory != null) {
            directory.close();
        }
    }
}
