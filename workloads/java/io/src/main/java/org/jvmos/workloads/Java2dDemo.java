package org.jvmos.workloads;

import java.awt.AlphaComposite;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Composite;
import java.awt.Font;
import java.awt.GradientPaint;
import java.awt.Graphics2D;
import java.awt.LinearGradientPaint;
import java.awt.MultipleGradientPaint;
import java.awt.RadialGradientPaint;
import java.awt.RenderingHints;
import java.awt.geom.AffineTransform;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Path2D;
import java.awt.geom.Point2D;
import java.awt.geom.RoundRectangle2D;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;
import javax.imageio.ImageIO;

/**
 * Headless Java2D rendering demo. Every frame is drawn into a fresh TYPE_INT_ARGB BufferedImage
 * with antialiasing (gradients, filled and stroked ellipses, paths and rounded rectangles, alpha
 * compositing, AffineTransform rotations, SansSerif/Serif text at several sizes, a scaled
 * drawImage of a small sprite), encoded to PNG with ImageIO and written to DIR/frame-i.png. The
 * drawing is a pure function of the frame index and size, so runs are deterministic (the
 * crc32 of all PNG bytes is reported). Frames are deleted at the end unless {@code --keep}.
 *
 * <pre>Java2dDemo --frames N --width W --height H --out DIR [--keep]</pre>
 */
public final class Java2dDemo extends Workload {

    private static final int SPRITE = 48;

    Java2dDemo() {
        super(List.of("frames", "width", "height", "out"), List.of("keep"));
        // before anything can touch AWT: main and the tests both construct the workload first
        System.setProperty("java.awt.headless", "true");
    }

    public static void main(String[] args) {
        new Java2dDemo().runAndExitOnFailure(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        int frames = cli.intValue("frames", 30, 0, 1_000_000);
        int width = cli.intValue("width", 640, 16, 8192);
        int height = cli.intValue("height", 480, 16, 8192);
        String outDir = cli.string("out", null);
        boolean keep = cli.flag("keep");

        Path dir = Paths.get(outDir);
        boolean createdDir = !Files.isDirectory(dir);
        List<Path> written = new ArrayList<>();
        long totalBytes = 0;
        long elapsed;
        CRC32 crc = new CRC32();
        try {
            Files.createDirectories(dir);
            ImageIO.setUseCache(false); // encode in memory, no temp cache files
            BufferedImage sprite = makeSprite();
            ByteArrayOutputStream png = new ByteArrayOutputStream(1 << 20);

            long t0 = System.nanoTime();
            for (int i = 0; i < frames; i++) {
                BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_INT_ARGB);
                Graphics2D g = img.createGraphics();
                try {
                    drawFrame(g, i, width, height, sprite);
                } finally {
                    g.dispose();
                }
                png.reset();
                if (!ImageIO.write(img, "png", png)) {
                    err.println("error: no PNG writer available");
                    return 1;
                }
                Path file = dir.resolve("frame-" + i + ".png");
                written.add(file);
                try (OutputStream os = Files.newOutputStream(file)) { // create or truncate
                    png.writeTo(os);
                }
                crc.update(png.toByteArray());
                totalBytes += png.size();
            }
            elapsed = System.nanoTime() - t0;
        } catch (IOException e) {
            err.println("error: " + outDir + ": " + e.getMessage());
            return 1;
        } catch (RuntimeException | Error e) {
            err.println("error: java2d: " + e);
            return 1;
        } finally {
            if (!keep) {
                for (Path p : written) {
                    try {
                        Files.deleteIfExists(p);
                    } catch (IOException e) {
                        err.println("warning: could not delete " + p + ": " + e.getMessage());
                    }
                }
                if (createdDir) {
                    try {
                        Files.deleteIfExists(dir); // only if we created it and it is now empty
                    } catch (IOException e) {
                        // not empty or not ours: leave it
                    }
                }
            }
        }

        out.println(Cli.summary("java2d")
                .put("ops", frames)
                .put("bytes", totalBytes)
                .put("width", width)
                .put("height", height)
                .put("out", outDir)
                .put("png_crc32", Long.toHexString(crc.getValue()))
                .put("elapsed_ns", elapsed)
                .put("ns_per_op", frames == 0 ? 0.0 : (double) elapsed / frames)
                .put("java_version", Cli.javaVersion()));
        return 0;
    }

    /** A small procedurally drawn sprite that is drawn scaled in every frame. */
    static BufferedImage makeSprite() {
        BufferedImage s = new BufferedImage(SPRITE, SPRITE, BufferedImage.TYPE_INT_ARGB);
        Graphics2D g = s.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            for (int y = 0; y < SPRITE; y += 8) {
                for (int x = 0; x < SPRITE; x += 8) {
                    g.setColor(((x + y) / 8) % 2 == 0 ? new Color(255, 255, 255, 90) : new Color(0, 0, 0, 60));
                    g.fillRect(x, y, 8, 8);
                }
            }
            g.setPaint(new RadialGradientPaint(new Point2D.Float(SPRITE / 2f, SPRITE / 2f), SPRITE / 2f,
                    new float[] {0f, 0.7f, 1f},
                    new Color[] {new Color(255, 240, 120, 255), new Color(240, 90, 40, 200), new Color(120, 0, 80, 0)}));
            g.fill(new Ellipse2D.Float(2, 2, SPRITE - 4, SPRITE - 4));
            g.setColor(new Color(20, 20, 60));
            g.setStroke(new BasicStroke(2f));
            g.draw(new Ellipse2D.Float(6, 6, SPRITE - 12, SPRITE - 12));
        } finally {
            g.dispose();
        }
        return s;
    }

    /** Draws frame {@code i}; a pure function of its arguments. */
    static void drawFrame(Graphics2D g, int i, int w, int h, BufferedImage sprite) {
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_RENDERING, RenderingHints.VALUE_RENDER_QUALITY);
        g.setRenderingHint(RenderingHints.KEY_INTERPOLATION, RenderingHints.VALUE_INTERPOLATION_BILINEAR);
        g.setRenderingHint(RenderingHints.KEY_STROKE_CONTROL, RenderingHints.VALUE_STROKE_PURE);
        g.setRenderingHint(RenderingHints.KEY_FRACTIONALMETRICS, RenderingHints.VALUE_FRACTIONALMETRICS_ON);

        Random rnd = new Random(0x5EEDL * 31 + i);
        float phase = (i % 60) / 60f;

        // 1. background: two-colour gradient whose hue drifts with the frame index
        g.setPaint(new GradientPaint(0, 0, Color.getHSBColor(phase, 0.45f, 0.95f),
                w, h, Color.getHSBColor((phase + 0.5f) % 1f, 0.6f, 0.35f)));
        g.fillRect(0, 0, w, h);

        // 2. translucent filled + stroked ellipses (alpha compositing)
        Composite opaque = g.getComposite();
        g.setComposite(AlphaComposite.getInstance(AlphaComposite.SRC_OVER, 0.55f));
        g.setStroke(new BasicStroke(2.5f));
        for (int k = 0; k < 16; k++) {
            float ew = 20 + rnd.nextFloat() * w / 4f;
            float eh = 20 + rnd.nextFloat() * h / 4f;
            float ex = rnd.nextFloat() * (w - ew);
            float ey = rnd.nextFloat() * (h - eh);
            Ellipse2D e = new Ellipse2D.Float(ex, ey, ew, eh);
            g.setColor(Color.getHSBColor(rnd.nextFloat(), 0.8f, 0.9f));
            g.fill(e);
            g.setColor(new Color(0, 0, 0, 160));
            g.draw(e);
        }
        g.setComposite(opaque);

        // 3. a closed Bezier path (star-like) filled with a multi-stop linear gradient
        Path2D.Float path = new Path2D.Float();
        float cx = w / 2f;
        float cy = h / 2f;
        float r0 = Math.min(w, h) * 0.38f;
        int points = 7;
        for (int k = 0; k <= points * 2; k++) {
            double a = Math.PI * k / points + phase * 2 * Math.PI / points;
            float r = (k % 2 == 0) ? r0 : r0 * 0.45f;
            float px = cx + (float) (Math.cos(a) * r);
            float py = cy + (float) (Math.sin(a) * r);
            if (k == 0) {
                path.moveTo(px, py);
            } else {
                double am = Math.PI * (k - 0.5) / points + phase * 2 * Math.PI / points;
                path.quadTo(cx + (float) (Math.cos(am) * r0 * 0.8f), cy + (float) (Math.sin(am) * r0 * 0.8f), px, py);
            }
        }
        path.closePath();
        g.setPaint(new LinearGradientPaint(cx - r0, cy - r0, cx + r0, cy + r0,
                new float[] {0f, 0.5f, 1f},
                new Color[] {new Color(250, 220, 60, 220), new Color(230, 60, 120, 220), new Color(60, 90, 230, 220)},
                MultipleGradientPaint.CycleMethod.REFLECT));
        g.fill(path);
        g.setColor(new Color(255, 255, 255, 200));
        g.setStroke(new BasicStroke(3f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND));
        g.draw(path);

        // 4. rotated rounded rectangles (AffineTransform)
        AffineTransform saved = g.getTransform();
        for (int k = 0; k < 6; k++) {
            double angle = (phase + k / 6.0) * 2 * Math.PI;
            g.setTransform(saved);
            g.rotate(angle, cx, cy);
            RoundRectangle2D rr = new RoundRectangle2D.Float(cx + r0 * 0.55f, cy - 12, r0 * 0.5f, 24, 14, 14);
            g.setColor(new Color(30 + 35 * k, 200 - 25 * k, 160, 190));
            g.fill(rr);
            g.setColor(Color.DARK_GRAY);
            g.setStroke(new BasicStroke(1.5f));
            g.draw(rr);
        }
        g.setTransform(saved);

        // 5. scaled drawImage of the sprite
        for (int k = 0; k < 4; k++) {
            int size = SPRITE + (int) (SPRITE * (0.5 + k * 0.6));
            int x = (int) ((w - size) * ((k * 0.3 + phase) % 1.0));
            int y = h - size - 4 - (k % 2) * (h / 5);
            g.drawImage(sprite, x, Math.max(0, y), size, size, null);
        }

        // 6. text in several logical fonts and sizes, one line rotated
        int[] sizes = {11, 16, 24, 36};
        int ty = 4;
        for (int k = 0; k < sizes.length; k++) {
            Font f = new Font(k % 2 == 0 ? "SansSerif" : "Serif", k == 3 ? Font.BOLD | Font.ITALIC : Font.PLAIN, sizes[k]);
            g.setFont(f);
            ty += g.getFontMetrics().getAscent() + 2;
            g.setColor(new Color(0, 0, 0, 120));
            String text = "jvmos Java2D frame " + i + " \u2014 size " + sizes[k];
            g.drawString(text, 11, ty + 1);
            g.setColor(Color.WHITE);
            g.drawString(text, 10, ty);
        }
        g.setTransform(saved);
        g.rotate(-Math.PI / 12 + phase * Math.PI / 6, w * 0.7, h * 0.2);
        g.setFont(new Font("Serif", Font.BOLD, 28));
        g.setColor(new Color(255, 255, 255, 210));
        g.drawString("rotated " + i, (float) (w * 0.6), (float) (h * 0.2));
        g.setTransform(saved);
    }
}
