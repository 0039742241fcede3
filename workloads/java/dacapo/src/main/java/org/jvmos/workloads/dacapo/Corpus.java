package org.jvmos.workloads.dacapo;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * A seeded synthetic text collection standing in for DaCapo's books and articles: invented words with a
 * Zipf frequency distribution, grouped into sentences and documents. It keeps every document's tokens
 * so that index statistics and query hit counts can be computed independently of Lucene.
 */
final class Corpus {
    static final int TITLE_WORDS = 8;
    private static final String[] ONSETS = {"b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "qu", "r",
        "s", "t", "v", "w", "z", "br", "ch", "cl", "dr", "gr", "pl", "sh", "st", "th", "tr"};
    private static final String[] VOWELS = {"a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"};

    final String[] vocabulary;
    final int[][] docs;
    private int[][] postings;
    private long[] termFrequencies;

    private Corpus(String[] vocabulary, int[][] docs) {
        this.vocabulary = vocabulary;
        this.docs = docs;
    }

    static Corpus generate(long seed, int docCount, int meanLength, int vocabularySize) {
        Random random = new Random(seed);
        String[] vocabulary = inventWords(random, vocabularySize);
        double[] cumulative = zipfCumulative(vocabularySize);
        int[][] docs = new int[docCount][];
        for (int d = 0; d < docCount; d++) {
            int length = TITLE_WORDS + meanLength / 2 + random.nextInt(meanLength);
            int[] tokens = new int[length];
            for (int i = 0; i < length; i++) {
                tokens[i] = sample(cumulative, random.nextDouble());
            }
            docs[d] = tokens;
        }
        return new Corpus(vocabulary, docs);
    }

    private static String[] inventWords(Random random, int count) {
        Set<String> seen = new HashSet<>();
        String[] words = new String[count];
        int n = 0;
        while (n < count) {
            StringBuilder sb = new StringBuilder();
            int syllables = 1 + random.nextInt(4);
            for (int s = 0; s < syllables; s++) {
                sb.append(ONSETS[random.nextInt(ONSETS.length)]).append(VOWELS[random.nextInt(VOWELS.length)]);
            }
            if (random.nextBoolean()) {
                sb.append(ONSETS[random.nextInt(ONSETS.length)]);
            }
            String w = sb.toString();
            if (w.length() >= 3 && seen.add(w)) {
                words[n++] = w;
            }
        }
        return words;
    }

    private static double[] zipfCumulative(int n) {
        double[] c = new double[n];
        double sum = 0;
        for (int r = 0; r < n; r++) {
            sum += 1.0 / (r + 1);
            c[r] = sum;
        }
        for (int r = 0; r < n; r++) {
            c[r] /= sum;
        }
        return c;
    }

    private static int sample(double[] cumulative, double u) {
        int i = Arrays.binarySearch(cumulative, u);
        return Math.min(i >= 0 ? i : -i - 1, cumulative.length - 1);
    }

    String title(int doc) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < TITLE_WORDS; i++) {
            sb.append(i == 0 ? "" : " ").append(vocabulary[docs[doc][i]]);
        }
        return sb.toString();
    }

    /** Writes one file per document: the title line, then the text with sentences and paragraphs. */
    List<Path> writeFiles(Path dir) throws IOException {
        Files.createDirectories(dir);
        List<Path> files = new ArrayList<>(docs.length);
        for (int d = 0; d < docs.length; d++) {
            Path file = dir.resolve(String.format("doc-%06d.txt", d));
            try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
                w.write(title(d));
                w.write('\n');
                int[] tokens = docs[d];
                for (int i = 0; i < tokens.length; i++) {
                    String word = vocabulary[tokens[i]];
                    boolean sentenceStart = i % 12 == 0;
                    if (sentenceStart) {
                        word = Character.toUpperCase(word.charAt(0)) + word.substring(1);
                    }
                    w.write(word);
                    w.write(i % 12 == 11 || i == tokens.length - 1 ? (i % 96 == 95 ? ".\n\n" : ". ") : " ");
                }
            }
            files.add(file);
        }
        return files;
    }

    long totalTokens() {
        long n = 0;
        for (int[] d : docs) {
            n += d.length;
        }
        return n;
    }

    /** The sorted ids of the documents that contain word at least once. */
    int[] postings(int word) {
        if (postings == null) {
            buildPostings();
        }
        return postings[word];
    }

    /** How many times word occurs in the whole corpus. */
    long termFrequency(int word) {
        if (postings == null) {
            buildPostings();
        }
        return termFrequencies[word];
    }

    private void buildPostings() {
        int[] counts = new int[vocabulary.length];
        long[] frequencies = new long[vocabulary.length];
        int[] lastDoc = new int[vocabulary.length];
        Arrays.fill(lastDoc, -1);
        for (int d = 0; d < docs.length; d++) {
            for (int t : docs[d]) {
                frequencies[t]++;
                if (lastDoc[t] != d) {
                    lastDoc[t] = d;
                    counts[t]++;
                }
            }
        }
        int[][] p = new int[vocabulary.length][];
        for (int w = 0; w < p.length; w++) {
            p[w] = new int[counts[w]];
        }
        int[] fill = new int[vocabulary.length];
        Arrays.fill(lastDoc, -1);
        for (int d = 0; d < docs.length; d++) {
            for (int t : docs[d]) {
                if (lastDoc[t] != d) {
                    lastDoc[t] = d;
                    p[t][fill[t]++] = d;
                }
            }
        }
        termFrequencies = frequencies;
        postings = p;
    }

    /** Whether doc has word immediately followed by next. */
    boolean hasBigram(int doc, int word, int next) {
        int[] tokens = docs[doc];
        for (int i = 0; i + 1 < tokens.length; i++) {
            if (tokens[i] == word && tokens[i + 1] == next) {
                return true;
            }
        }
        return false;
    }
}
