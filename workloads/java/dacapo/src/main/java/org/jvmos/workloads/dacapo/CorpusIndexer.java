package org.jvmos.workloads.dacapo;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.IntPoint;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;

/** Indexes corpus files from disk the way Lucene's demo IndexFiles does (DaCapo's luindex is built on it). */
final class CorpusIndexer {
    static final String PATH = "path";
    static final String NUM = "num";
    static final String TITLE = "title";
    static final String BODY = "body";

    private CorpusIndexer() {
    }

    static void index(List<Path> files, Path indexDir) throws IOException {
        IndexWriterConfig config = new IndexWriterConfig(new StandardAnalyzer())
                .setOpenMode(IndexWriterConfig.OpenMode.CREATE);
        try (Directory dir = FSDirectory.open(indexDir); IndexWriter writer = new IndexWriter(dir, config)) {
            for (int num = 0; num < files.size(); num++) {
                Path file = files.get(num);
                try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                    Document doc = new Document();
                    doc.add(new StringField(PATH, file.getFileName().toString(), Field.Store.YES));
                    doc.add(new IntPoint(NUM, num));
                    doc.add(new StoredField(NUM, num));
                    doc.add(new TextField(TITLE, in.readLine(), Field.Store.YES));
                    // The title line is consumed above; the body is streamed from the same reader.
                    doc.add(new TextField(BODY, in));
                    writer.addDocument(doc);
                }
            }
            writer.commit();
        }
    }
}
