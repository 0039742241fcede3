package org.jvmos.workloads.dacapo;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Date;
import java.util.Random;

import javax.xml.parsers.SAXParserFactory;

import org.apache.fop.apps.FOUserAgent;
import org.apache.fop.apps.Fop;
import org.apache.fop.apps.FopFactory;
import org.apache.fop.apps.MimeConstants;
import org.xml.sax.InputSource;
import org.xml.sax.XMLReader;

/**
 * Apache FOP laying out generated XSL-FO documents (a contents page with page-number citations, then
 * sections of paragraphs, a table and a list, each starting a new page) and writing them as PDF.
 * Every section is sized to fit one page, so the page count is known in advance; validation checks it
 * both from FOP's own results and by counting the page objects in the PDF bytes.
 */
final class FopBenchmark implements Benchmark {
    private static final long SEED = 0x464f5001L;
    private static final String FO = "http://www.w3.org/1999/XSL/Format";
    private static final String[] WORDS = {"layout", "engine", "page", "column", "margin", "block", "inline",
        "area", "region", "flow", "table", "cell", "border", "font", "glyph", "kerning", "line", "break",
        "keep", "widow", "orphan", "space", "before", "after", "start", "end", "leader", "footnote", "float",
        "marker", "sequence", "master", "simple", "body", "static", "content", "citation", "number", "list",
        "item", "label", "reference", "document", "render", "output", "stream", "object", "catalog"};

    private FopFactory factory;
    private byte[][] documents;
    private int[] expectedPages;
    private byte[][] pdfs;
    private int[] pages;

    @Override
    public String name() {
        return "fop";
    }

    @Override
    public void setup(Size size, Path workDir, int threads) {
        factory = FopFactory.newInstance(workDir.toUri());
        int docs = size.pick(3, 40, 150);
        documents = new byte[docs][];
        expectedPages = new int[docs];
        pdfs = new byte[docs][];
        pages = new int[docs];
        for (int d = 0; d < docs; d++) {
            Random random = new Random(SEED + d);
            int sections = 6 + random.nextInt(size.pick(6, 18, 18));
            documents[d] = document(d, sections, random);
            expectedPages[d] = 1 + sections;
        }
    }

    private static byte[] document(int d, int sections, Random random) {
        StringBuilder fo = new StringBuilder(sections * 6000);
        fo.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<fo:root xmlns:fo=\"").append(FO).append("\">\n")
                .append("<fo:layout-master-set><fo:simple-page-master master-name=\"A4\" page-height=\"297mm\"")
                .append(" page-width=\"210mm\" margin=\"20mm\"><fo:region-body margin-bottom=\"15mm\"/>")
                .append("<fo:region-after extent=\"10mm\"/></fo:simple-page-master></fo:layout-master-set>\n")
                .append("<fo:page-sequence master-reference=\"A4\">\n")
                .append("<fo:static-content flow-name=\"xsl-region-after\"><fo:block text-align=\"center\"")
                .append(" font-size=\"8pt\">Report ").append(d).append(" - page <fo:page-number/> of ")
                .append("<fo:page-number-citation ref-id=\"end\"/></fo:block></fo:static-content>\n")
                .append("<fo:flow flow-name=\"xsl-region-body\" font-family=\"Times\" font-size=\"10pt\">\n")
                .append("<fo:block font-family=\"Helvetica\" font-size=\"20pt\" space-after=\"12pt\">Report ")
                .append(d).append("</fo:block>\n");
        for (int s = 0; s < sections; s++) {
            fo.append("<fo:block text-align-last=\"justify\">").append(s + 1).append(". ").append(words(random, 4))
                    .append("<fo:leader leader-pattern=\"dots\"/><fo:page-number-citation ref-id=\"s")
                    .append(s).append("\"/></fo:block>\n");
        }
        for (int s = 0; s < sections; s++) {
            fo.append("<fo:block id=\"s").append(s).append("\" break-before=\"page\" font-family=\"Helvetica\"")
                    .append(" font-size=\"15pt\" font-weight=\"bold\" space-after=\"8pt\" keep-with-next=\"always\">")
                    .append(s + 1).append(". ").append(words(random, 4)).append("</fo:block>\n");
            for (int p = 0; p < 3; p++) {
                fo.append("<fo:block text-align=\"justify\" space-after=\"6pt\" text-indent=\"1em\">")
                        .append(words(random, 30 + random.nextInt(40)))
                        .append(" <fo:inline font-weight=\"bold\">").append(words(random, 2))
                        .append("</fo:inline> <fo:inline font-style=\"italic\">").append(words(random, 3))
                        .append("</fo:inline>.</fo:block>\n");
            }
            table(fo, random);
            fo.append("<fo:list-block provisional-distance-between-starts=\"8mm\" space-before=\"6pt\">\n");
            for (int i = 0; i < 5; i++) {
                fo.append("<fo:list-item><fo:list-item-label end-indent=\"label-end()\"><fo:block>")
                        .append((char) ('a' + i)).append(")</fo:block></fo:list-item-label>")
                        .append("<fo:list-item-body start-indent=\"body-start()\"><fo:block>")
                        .append(words(random, 6 + random.nextInt(8))).append("</fo:block></fo:list-item-body>")
                        .append("</fo:list-item>\n");
            }
            fo.append("</fo:list-block>\n");
        }
        fo.append("<fo:block id=\"end\"/></fo:flow></fo:page-sequence></fo:root>\n");
        return fo.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static void table(StringBuilder fo, Random random) {
        fo.append("<fo:table table-layout=\"fixed\" width=\"100%\" border-collapse=\"separate\" space-before=\"6pt\">")
                .append("<fo:table-column column-width=\"15mm\"/><fo:table-column column-width=\"70mm\"/>")
                .append("<fo:table-column column-width=\"40mm\"/><fo:table-column column-width=\"proportional-column-width(1)\"/>")
                .append("<fo:table-header><fo:table-row font-weight=\"bold\" background-color=\"#dddddd\">");
        for (String h : new String[] {"No", "Item", "Kind", "Amount"}) {
            fo.append("<fo:table-cell border=\"0.5pt solid black\" padding=\"2pt\"><fo:block>").append(h)
                    .append("</fo:block></fo:table-cell>");
        }
        fo.append("</fo:table-row></fo:table-header><fo:table-body>\n");
        for (int r = 0; r < 8; r++) {
            fo.append("<fo:table-row>");
            String[] cells = {Integer.toString(r + 1), words(random, 3), words(random, 1),
                String.format("%d.%02d", random.nextInt(10_000), random.nextInt(100))};
            for (int c = 0; c < cells.length; c++) {
                fo.append("<fo:table-cell border=\"0.5pt solid black\" padding=\"2pt\"")
                        .append(c == 3 ? " text-align=\"end\"" : "").append("><fo:block>").append(cells[c])
                        .append("</fo:block></fo:table-cell>");
            }
            fo.append("</fo:table-row>\n");
        }
        fo.append("</fo:table-body></fo:table>\n");
    }

    private static String words(Random random, int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append(i == 0 ? "" : " ").append(WORDS[random.nextInt(WORDS.length)]);
        }
        return sb.toString();
    }

    @Override
    public void iterate() throws Exception {
        SAXParserFactory parsers = SAXParserFactory.newDefaultInstance();
        parsers.setNamespaceAware(true);
        for (int d = 0; d < documents.length; d++) {
            FOUserAgent agent = factory.newFOUserAgent();
            // fixed metadata: the same input gives the same PDF in every iteration
            agent.setCreationDate(new Date(0));
            agent.setProducer("jvmos-dacapo");
            ByteArrayOutputStream out = new ByteArrayOutputStream(64 * 1024);
            Fop fop = factory.newFop(MimeConstants.MIME_PDF, agent, out);
            XMLReader reader = parsers.newSAXParser().getXMLReader();
            reader.setContentHandler(fop.getDefaultHandler());
            reader.parse(new InputSource(new ByteArrayInputStream(documents[d])));
            pages[d] = fop.getResults().getPageCount();
            pdfs[d] = out.toByteArray();
        }
    }

    @Override
    public void validate() throws Exception {
        for (int d = 0; d < documents.length; d++) {
            Check.equal("fop document " + d + " pages laid out", expectedPages[d], pages[d]);
            validatePdf("fop document " + d, pdfs[d], expectedPages[d]);
        }
    }

    /** The PDF is complete (header, trailer) and holds one page object per expected page. */
    static void validatePdf(String what, byte[] pdf, int expectedPages) throws ValidationException {
        Check.isTrue(pdf != null && pdf.length > 1000, what + ": PDF missing or too small");
        String text = new String(pdf, StandardCharsets.ISO_8859_1);
        Check.isTrue(text.startsWith("%PDF-"), what + ": no %PDF- header");
        Check.isTrue(text.substring(Math.max(0, text.length() - 32)).contains("%%EOF"), what + ": no %%EOF trailer");
        int pageObjects = 0;
        for (int i = text.indexOf("/Type /Page"); i >= 0; i = text.indexOf("/Type /Page", i + 1)) {
            // "/Type /Pages" is the page tree, not a page
            pageObjects += text.startsWith("/Type /Pages", i) ? 0 : 1;
        }
        Check.equal(what + ": page objects in the PDF", expectedPages, pageObjects);
    }
}
