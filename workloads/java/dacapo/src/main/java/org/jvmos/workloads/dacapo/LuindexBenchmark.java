package org.jvmos.workloads.dacapo;

import java.nio.file.Path;
import java.util.List;

import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;

/**
 * Lucene indexing of a generated corpus read from files, single-threaded as in DaCapo.
 * Validation compares the index's statistics with counts taken from the corpus itself.
 */
final class LuindexBenchmark implements Benchmark {
    private static final long SEED = 0x4c55_494eL;
    private static final int SAMPLED_WORDS = 40;

    private Corpus corpus;
    private List<Path> files;
    private Path indexDir;

    @Override
    public String name() {
        return "luindex";
    }

    @Override
    public void setup(Size size, Path workDir, int threads) throws Exception {
        corpus = Corpus.generate(SEED, size.pick(2_000, 40_000, 150_000), 200, size.pick(8_000, 30_000, 60_000));
        files = corpus.writeFiles(workDir.resolve("corpus"));
        indexDir = workDir.resolve("index");
    }

    @Override
    public void prepareIteration() {
        // a fresh index every iteration: appending to the last one would change the work
        WorkDir.delete(indexDir);
    }

    @Override
    public void iterate() throws Exception {
        CorpusIndexer.index(files, indexDir);
    }

    @Override
    public void validate() throws Exception {
        try (Directory dir = FSDirectory.open(indexDir); DirectoryReader reader = DirectoryReader.open(dir)) {
            Check.equal("luindex documents", corpus.docs.length, reader.numDocs());
            Check.equal("luindex body tokens", corpus.totalTokens(), reader.getSumTotalTermFreq(CorpusIndexer.BODY));
            // Words from the most to the least frequent: both the long and the short posting lists must be right.
            int vocabulary = corpus.vocabulary.length;
            for (int i = 0; i < SAMPLED_WORDS; i++) {
                int word = (int) ((long) i * i * vocabulary / ((long) SAMPLED_WORDS * SAMPLED_WORDS));
                Term term = new Term(CorpusIndexer.BODY, corpus.vocabulary[word]);
                Check.equal("luindex docFreq of '" + term.text() + "'", corpus.postings(word).length,
                        reader.docFreq(term));
                Check.equal("luindex totalTermFreq of '" + term.text() + "'", corpus.termFrequency(word),
                        reader.totalTermFreq(term));
            }
            int probe = corpus.docs.length / 2;
            IndexSearcher searcher = new IndexSearcher(reader);
            TopDocs hits = searcher.search(new TermQuery(new Term(CorpusIndexer.PATH,
                    files.get(probe).getFileName().toString())), 2);
            Check.equal("luindex hits for one path", 1, hits.totalHits.value);
            ScoreDoc hit = hits.scoreDocs[0];
            Check.equal("luindex stored title of document " + probe, corpus.title(probe),
                    searcher.storedFields().document(hit.doc).get(CorpusIndexer.TITLE));
        }
    }
}
