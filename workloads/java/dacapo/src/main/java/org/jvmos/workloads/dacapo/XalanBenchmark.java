package org.jvmos.workloads.dacapo;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.zip.CRC32;

import javax.xml.transform.Templates;
import javax.xml.transform.Transformer;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.stream.StreamResult;
import javax.xml.transform.stream.StreamSource;

/**
 * XSLT with Apache Xalan-J (named explicitly: the JDK's built-in XSLTC and PMD's Saxon are also on the
 * class path). T threads transform generated catalogs with one compiled stylesheet, as DaCapo's xalan
 * does with its XMark documents. The stylesheet's summary line and grouping results are checked against
 * figures computed while generating the input.
 */
final class XalanBenchmark implements Benchmark {
    private static final long SEED = 0x58414c41L;
    private static final String[] CATEGORIES = {"tools", "garden", "kitchen", "books", "music", "toys", "sports",
        "office", "outdoor", "lighting", "storage", "textiles", "audio", "camping"};
    private static final String[] TAGS = {"new", "sale", "eco", "handmade", "imported", "bestseller", "gift",
        "limited", "classic", "compact", "deluxe", "family", "travel", "vintage", "pro", "kids", "wireless",
        "organic", "refurbished", "bundle", "seasonal", "heavy", "light", "waterproof", "quiet"};
    private static final String[] WORDS = {"sturdy", "bright", "steel", "oak", "soft", "blue", "quick", "warm",
        "frame", "handle", "blade", "cover", "lamp", "kettle", "board", "cable", "pocket", "wheel", "spring",
        "glass", "linen", "brass", "copper", "maple", "granite", "polished", "folding", "silent", "daily",
        "trail", "harbor", "meadow", "summit", "canyon", "river", "forest", "ember", "frost", "willow"};

    private int threads;
    private Templates templates;
    private byte[][] inputs;
    private byte[][] outputs;
    private int[] itemCounts;
    private String[] summaries;
    private String[] topTags;
    private final Check.Stable outputCrc = new Check.Stable("xalan output CRC");

    @Override
    public String name() {
        return "xalan";
    }

    @Override
    public void setup(Size size, Path workDir, int threads) throws Exception {
        this.threads = threads;
        TransformerFactory factory = new org.apache.xalan.processor.TransformerFactoryImpl();
        URL xsl = XalanBenchmark.class.getResource("catalog.xsl");
        try (InputStream in = xsl.openStream()) {
            templates = factory.newTemplates(new StreamSource(in, xsl.toExternalForm()));
        }
        int docs = size.pick(16, 300, 1_200);
        int items = size.pick(300, 500, 600);
        inputs = new byte[docs][];
        outputs = new byte[docs][];
        itemCounts = new int[docs];
        summaries = new String[docs];
        topTags = new String[docs];
        for (int d = 0; d < docs; d++) {
            inputs[d] = catalog(d, new Random(SEED + d), items / 2 + new Random(SEED - d).nextInt(items));
        }
    }

    /** One catalog document; records the figures the stylesheet must reproduce. */
    private byte[] catalog(int d, Random random, int items) {
        StringBuilder xml = new StringBuilder(items * 400);
        xml.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<catalog id=\"cat").append(d)
                .append("\" region=\"").append(CATEGORIES[d % CATEGORIES.length]).append("\">\n");
        Set<String> categories = new LinkedHashSet<>();
        Map<String, Integer> tagCounts = new HashMap<>();
        long qty = 0;
        long price = 0;
        for (int i = 0; i < items; i++) {
            String category = CATEGORIES[Math.min(random.nextInt(CATEGORIES.length),
                    random.nextInt(CATEGORIES.length))];
            int itemPrice = 99 + random.nextInt(250_000);
            int itemQty = random.nextInt(8) == 0 ? random.nextInt(5) : random.nextInt(500);
            categories.add(category);
            qty += itemQty;
            price += itemPrice;
            xml.append("  <item sku=\"S").append(d).append('-').append(String.format("%05d", i))
                    .append("\" category=\"").append(category).append("\" price=\"").append(itemPrice)
                    .append("\" qty=\"").append(itemQty).append("\" rating=\"").append(random.nextInt(6))
                    .append("\">\n    <name>").append(word(random)).append(' ').append(word(random))
                    .append("</name>\n    <description>");
            int words = 5 + random.nextInt(40);
            for (int w = 0; w < words; w++) {
                xml.append(w == 0 ? "" : random.nextInt(15) == 0 ? " &amp; " : " ").append(word(random));
            }
            xml.append("</description>\n    <tags>");
            Set<String> tags = new LinkedHashSet<>();
            int tagCount = 1 + random.nextInt(4);
            while (tags.size() < tagCount) {
                tags.add(TAGS[Math.min(random.nextInt(TAGS.length), random.nextInt(TAGS.length))]);
            }
            for (String tag : tags) {
                xml.append("<tag>").append(tag).append("</tag>");
                tagCounts.merge(tag, 1, Integer::sum);
            }
            xml.append("</tags>\n  </item>\n");
        }
        xml.append("</catalog>\n");
        itemCounts[d] = items;
        summaries[d] = "<p id=\"summary\">items=" + items + ";categories=" + categories.size() + ";qty=" + qty
                + ";price=" + price + "</p>";
        Map.Entry<String, Integer> top = null;
        for (Map.Entry<String, Integer> e : tagCounts.entrySet()) {
            if (top == null || e.getValue() > top.getValue()
                    || (e.getValue().equals(top.getValue()) && e.getKey().compareTo(top.getKey()) < 0)) {
                top = e;
            }
        }
        topTags[d] = "<span class=\"tag\">" + top.getKey() + ":" + top.getValue() + "</span>";
        return xml.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static String word(Random random) {
        return WORDS[random.nextInt(WORDS.length)];
    }

    @Override
    public void prepareIteration() {
        Arrays.fill(outputs, null);
    }

    @Override
    public void iterate() throws Exception {
        Workers.run(name(), threads, (worker, count) -> {
            for (int d = worker; d < inputs.length; d += count) {
                // a Transformer per document: Templates is the thread-safe, shared part
                Transformer transformer = templates.newTransformer();
                ByteArrayOutputStream out = new ByteArrayOutputStream(inputs[d].length * 2);
                transformer.transform(new StreamSource(new ByteArrayInputStream(inputs[d])), new StreamResult(out));
                outputs[d] = out.toByteArray();
            }
        });
    }

    @Override
    public void validate() throws Exception {
        Check.isTrue(templates.getClass().getName().startsWith("org.apache.xalan."),
                "xalan: stylesheet compiled by " + templates.getClass().getName() + ", not Xalan");
        CRC32 crc = new CRC32();
        for (int d = 0; d < outputs.length; d++) {
            Check.isTrue(outputs[d] != null, "xalan: no output for document " + d);
            String html = new String(outputs[d], StandardCharsets.UTF_8);
            Check.isTrue(html.contains(summaries[d]), "xalan document " + d + ": summary " + summaries[d]
                    + " missing");
            Check.equal("xalan document " + d + " item rows", itemCounts[d], occurrences(html, "<tr class=\"item\">"));
            int firstTag = html.indexOf("<span class=\"tag\">");
            Check.isTrue(firstTag >= 0 && html.startsWith(topTags[d], firstTag), "xalan document " + d
                    + ": most used tag should be " + topTags[d]);
            crc.update(outputs[d]);
        }
        outputCrc.check(crc.getValue());
    }

    private static int occurrences(String haystack, String needle) {
        int n = 0;
        for (int i = haystack.indexOf(needle); i >= 0; i = haystack.indexOf(needle, i + needle.length())) {
            n++;
        }
        return n;
    }
}
