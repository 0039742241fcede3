package org.jvmos.workloads.dacapo;

import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.zip.CRC32;

import javax.imageio.ImageIO;

import org.apache.batik.transcoder.TranscoderInput;
import org.apache.batik.transcoder.TranscoderOutput;
import org.apache.batik.transcoder.image.PNGTranscoder;

/**
 * Apache Batik rasterising generated SVG drawings (gradients, bezier paths, transforms, opacity, dashes,
 * a blur filter, text) to PNG, single-threaded as in DaCapo. Each drawing ends with opaque probe squares
 * of known colours at known places; validation decodes the PNG and reads those pixels back.
 */
final class BatikBenchmark implements Benchmark {
    private static final long SEED = 0x42415449L;
    private static final int WIDTH = 640;
    private static final int HEIGHT = 480;
    private static final int PROBES = 6;

    private byte[][] drawings;
    private int[][] probeColors;
    private byte[][] pngs;
    private int shapes;
    private final Check.Stable pngCrc = new Check.Stable("batik PNG CRC");

    @Override
    public String name() {
        return "batik";
    }

    @Override
    public void setup(Size size, Path workDir, int threads) {
        int count = size.pick(6, 16, 64);
        shapes = size.pick(150, 250, 250);
        drawings = new byte[count][];
        probeColors = new int[count][];
        pngs = new byte[count][];
        for (int d = 0; d < count; d++) {
            drawings[d] = drawing(d, new Random(SEED + d));
        }
    }

    private byte[] drawing(int d, Random random) {
        StringBuilder svg = new StringBuilder(shapes * 200);
        svg.append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"")
                .append(" width=\"").append(WIDTH).append("\" height=\"").append(HEIGHT).append("\" viewBox=\"0 0 ")
                .append(WIDTH).append(' ').append(HEIGHT).append("\">\n<defs>\n")
                .append("<linearGradient id=\"lin\" x1=\"0\" y1=\"0\" x2=\"1\" y2=\"1\"><stop offset=\"0\" stop-color=\"")
                .append(color(random)).append("\"/><stop offset=\"1\" stop-color=\"").append(color(random))
                .append("\"/></linearGradient>\n<radialGradient id=\"rad\"><stop offset=\"0\" stop-color=\"")
                .append(color(random)).append("\" stop-opacity=\"0.9\"/><stop offset=\"1\" stop-color=\"")
                .append(color(random)).append("\" stop-opacity=\"0.2\"/></radialGradient>\n")
                .append("<filter id=\"blur\"><feGaussianBlur stdDeviation=\"3\"/></filter>\n")
                .append("<clipPath id=\"clip\"><circle cx=\"320\" cy=\"240\" r=\"200\"/></clipPath>\n</defs>\n")
                .append("<rect width=\"100%\" height=\"100%\" fill=\"url(#lin)\"/>\n")
                .append("<g clip-path=\"url(#clip)\">\n");
        for (int s = 0; s < shapes; s++) {
            svg.append(shape(random, s == shapes / 2));
        }
        svg.append("</g>\n<text x=\"20\" y=\"460\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"18\"")
                .append(" fill=\"black\">jvmos-dacapo batik drawing ").append(d).append("</text>\n");
        // Probes go last, in the corners the clip path leaves alone, so nothing can cover them.
        int[] colors = new int[PROBES];
        for (int p = 0; p < PROBES; p++) {
            colors[p] = random.nextInt(0x1000000);
            svg.append("<rect x=\"").append(probeX(p)).append("\" y=\"").append(probeY(p))
                    .append("\" width=\"16\" height=\"16\" fill=\"").append(String.format("#%06x", colors[p]))
                    .append("\"/>\n");
        }
        probeColors[d] = colors;
        svg.append("</svg>\n");
        return svg.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static int probeX(int p) {
        return 4 + (p % 3) * 20;
    }

    private static int probeY(int p) {
        return 4 + (p / 3) * 20;
    }

    private static String shape(Random random, boolean blurred) {
        String fill = random.nextInt(4) == 0 ? "url(#rad)" : color(random);
        String common = String.format(Locale.ROOT, " fill=\"%s\" fill-opacity=\"%.2f\" stroke=\"%s\""
                + " stroke-width=\"%d\"%s%s", fill, 0.3 + random.nextDouble() * 0.7, color(random),
                1 + random.nextInt(4), random.nextInt(3) == 0 ? " stroke-dasharray=\"6,3\"" : "",
                blurred ? " filter=\"url(#blur)\"" : "");
        String transform = String.format(Locale.ROOT, " transform=\"rotate(%d 320 240)\"", random.nextInt(360));
        int x = 100 + random.nextInt(440);
        int y = 40 + random.nextInt(400);
        switch (random.nextInt(4)) {
            case 0:
                return String.format("<circle cx=\"%d\" cy=\"%d\" r=\"%d\"%s/>\n", x, y, 5 + random.nextInt(60), common);
            case 1:
                return String.format("<ellipse cx=\"%d\" cy=\"%d\" rx=\"%d\" ry=\"%d\"%s%s/>\n", x, y,
                        5 + random.nextInt(80), 5 + random.nextInt(40), common, transform);
            case 2:
                return String.format("<path d=\"M%d %d C%d %d %d %d %d %d S%d %d %d %d Z\"%s/>\n", x, y,
                        x + random.nextInt(200) - 100, y - random.nextInt(150), x + random.nextInt(200) - 100,
                        y + random.nextInt(150), x + random.nextInt(120) - 60, y + random.nextInt(120) - 60,
                        x + random.nextInt(160) - 80, y + random.nextInt(160) - 80, x, y, common);
            default:
                StringBuilder points = new StringBuilder();
                int spikes = 5 + random.nextInt(4);
                int outer = 15 + random.nextInt(50);
                for (int i = 0; i < spikes * 2; i++) {
                    double angle = Math.PI * i / spikes;
                    double r = i % 2 == 0 ? outer : outer / 2.5;
                    points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x + r * Math.cos(angle),
                            y + r * Math.sin(angle)));
                }
                return String.format("<polygon points=\"%s\"%s%s/>\n", points.toString().trim(), common, transform);
        }
    }

    private static String color(Random random) {
        return String.format("#%06x", random.nextInt(0x1000000));
    }

    @Override
    public void iterate() throws Exception {
        PNGTranscoder transcoder = new PNGTranscoder();
        for (int d = 0; d < drawings.length; d++) {
            ByteArrayOutputStream out = new ByteArrayOutputStream(128 * 1024);
            TranscoderInput input = new TranscoderInput(new ByteArrayInputStream(drawings[d]));
            input.setURI("file:///jvmos-dacapo/batik/drawing-" + d + ".svg");
            transcoder.transcode(input, new TranscoderOutput(out));
            pngs[d] = out.toByteArray();
        }
    }

    @Override
    public void validate() throws Exception {
        CRC32 crc = new CRC32();
        for (int d = 0; d < drawings.length; d++) {
            validatePng("batik drawing " + d, pngs[d], probeColors[d]);
            crc.update(pngs[d]);
        }
        pngCrc.check(crc.getValue());
    }

    /** The PNG decodes to the drawing's size, shows the probe colours and more than a handful of colours. */
    static void validatePng(String what, byte[] png, int[] probes) throws Exception {
        Check.isTrue(png != null && png.length > 0, what + ": no PNG");
        BufferedImage image = ImageIO.read(new ByteArrayInputStream(png));
        Check.isTrue(image != null, what + ": output is not a PNG");
        Check.equal(what + " width", WIDTH, image.getWidth());
        Check.equal(what + " height", HEIGHT, image.getHeight());
        for (int p = 0; p < probes.length; p++) {
            int rgb = image.getRGB(probeX(p) + 8, probeY(p) + 8) & 0xffffff;
            Check.equal(what + " probe " + p + " colour", String.format("#%06x", probes[p]),
                    String.format("#%06x", rgb));
        }
        Set<Integer> colors = new HashSet<>();
        for (int y = 0; y < HEIGHT; y += 7) {
            for (int x = 0; x < WIDTH; x += 7) {
                colors.add(image.getRGB(x, y));
            }
        }
        Check.atLeast(what + " distinct colours", 100, colors.size());
    }
}
