package org.jvmos.workloads;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import java.awt.Graphics2D;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(20)
class Java2dDemoTest {

    /** Text rendering needs fontconfig and at least one font (Debian: fontconfig fonts-dejavu-core). */
    @BeforeAll
    static void fontsAvailable() {
        System.setProperty("java.awt.headless", "true");
        boolean ok;
        try {
            BufferedImage img = new BufferedImage(8, 8, BufferedImage.TYPE_INT_ARGB);
            Graphics2D g = img.createGraphics();
            g.drawString("x", 0, 6);
            g.dispose();
            ok = true;
        } catch (Throwable t) {
            ok = false;
        }
        assumeTrue(ok, "no usable fonts: install fontconfig and fonts-dejavu-core");
    }

    @Test
    void writesEveryFrameDeterministically(@TempDir Path tmp) throws Exception {
        Path dir = tmp.resolve("frames");
        String[] args = {"--frames", "3", "--width", "96", "--height", "64", "--out", dir.toString(), "--keep"};
        Run a = Run.of(new Java2dDemo(), args);
        assertEquals(0, a.rc, a::toString);
        for (int i = 0; i < 3; i++) {
            BufferedImage img = ImageIO.read(dir.resolve("frame-" + i + ".png").toFile());
            assertEquals(96, img.getWidth());
            assertEquals(64, img.getHeight());
        }
        byte[] first = Files.readAllBytes(dir.resolve("frame-1.png"));

        Run b = Run.of(new Java2dDemo(), args); // overwrites the same files
        assertEquals(0, b.rc, b::toString);
        assertArrayEquals(first, Files.readAllBytes(dir.resolve("frame-1.png")));
        assertEquals(a.num("bytes"), b.num("bytes"));
        assertTrue(a.lastLine().contains("\"workload\":\"java2d\""), a::toString);

        Run c = Run.of(new Java2dDemo(), "--frames", "2", "--width", "32", "--height", "32", "--out", dir.toString());
        assertEquals(0, c.rc, c::toString);
        assertFalse(Files.exists(dir.resolve("frame-0.png")), "frames are deleted without --keep");
    }
}
