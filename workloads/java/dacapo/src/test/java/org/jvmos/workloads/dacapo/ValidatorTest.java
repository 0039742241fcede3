package org.jvmos.workloads.dacapo;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.Arrays;

import javax.imageio.ImageIO;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Corrupted output must fail validation: the checks are what make a broken benchmark fail loudly. */
class ValidatorTest {

    @Test
    void h2DetectsOneCorruptedBalance(@TempDir Path dir) throws Exception {
        H2Benchmark h2 = new H2Benchmark();
        try {
            h2.setup(Size.SMALL, dir, 2);
            h2.prepareIteration();
            h2.iterate();
            h2.validate();
            try (Connection c = DriverManager.getConnection(h2.url()); Statement s = c.createStatement()) {
                s.executeUpdate("UPDATE account SET balance = balance + 1 WHERE id = 3");
            }
            ValidationException e = assertThrows(ValidationException.class, h2::validate);
            assertTrue(e.getMessage().startsWith("h2 account 3 balance"), e.getMessage());
        } finally {
            h2.teardown();
        }
    }

    @Test
    void h2DetectsALostHistoryRow(@TempDir Path dir) throws Exception {
        H2Benchmark h2 = new H2Benchmark();
        try {
            h2.setup(Size.SMALL, dir, 1);
            h2.prepareIteration();
            h2.iterate();
            try (Connection c = DriverManager.getConnection(h2.url()); Statement s = c.createStatement()) {
                s.executeUpdate("DELETE FROM history WHERE id = (SELECT MAX(id) FROM history)");
            }
            ValidationException e = assertThrows(ValidationException.class, h2::validate);
            assertTrue(e.getMessage().startsWith("h2 history rows"), e.getMessage());
        } finally {
            h2.teardown();
        }
    }

    @Test
    void pdfCheckRejectsTruncatedAndShortDocuments() {
        StringBuilder pdf = new StringBuilder("%PDF-1.4\n");
        for (int p = 0; p < 3; p++) {
            pdf.append(p + 4).append(" 0 obj\n<< /Type /Page /Parent 2 0 R >>\nendobj\n").append("x".repeat(400));
        }
        pdf.append("2 0 obj\n<< /Type /Pages /Count 3 >>\nendobj\ntrailer\n%%EOF\n");
        byte[] good = pdf.toString().getBytes(StandardCharsets.ISO_8859_1);
        assertDoesNotThrow(() -> FopBenchmark.validatePdf("pdf", good, 3));
        assertThrows(ValidationException.class, () -> FopBenchmark.validatePdf("pdf", good, 4));
        byte[] truncated = Arrays.copyOf(good, good.length - 40);
        assertThrows(ValidationException.class, () -> FopBenchmark.validatePdf("pdf", truncated, 3));
    }

    @Test
    void pngCheckRejectsAWrongProbeColour() throws Exception {
        BufferedImage image = new BufferedImage(640, 480, BufferedImage.TYPE_INT_RGB);
        for (int y = 0; y < 480; y++) {
            for (int x = 0; x < 640; x++) {
                image.setRGB(x, y, (x % 256) << 16 | (y % 256) << 8 | (x + y) % 256);
            }
        }
        Graphics2D g = image.createGraphics();
        g.setColor(new Color(0x123456));
        g.fillRect(0, 0, 64, 64);
        g.dispose();
        ByteArrayOutputStream png = new ByteArrayOutputStream();
        ImageIO.write(image, "png", png);
        assertDoesNotThrow(() -> BatikBenchmark.validatePng("png", png.toByteArray(), new int[] {0x123456}));
        ValidationException e = assertThrows(ValidationException.class,
                () -> BatikBenchmark.validatePng("png", png.toByteArray(), new int[] {0x123457}));
        assertTrue(e.getMessage().contains("probe 0"), e.getMessage());
    }

    @Test
    void stableOutputMustNotChange() throws Exception {
        Check.Stable crc = new Check.Stable("crc");
        crc.check(42);
        crc.check(42);
        assertThrows(ValidationException.class, () -> crc.check(43));
    }
}
