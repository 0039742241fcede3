package org.jvmos.workloads.dacapo;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import com.google.zxing.BarcodeFormat;
import com.google.zxing.BinaryBitmap;
import com.google.zxing.DecodeHintType;
import com.google.zxing.EncodeHintType;
import com.google.zxing.MultiFormatReader;
import com.google.zxing.MultiFormatWriter;
import com.google.zxing.RGBLuminanceSource;
import com.google.zxing.ReaderException;
import com.google.zxing.Result;
import com.google.zxing.common.BitMatrix;
import com.google.zxing.common.HybridBinarizer;

/**
 * ZXing decoding barcodes (QR, Data Matrix, Aztec, PDF417, Code 128) from generated noisy grey-scale
 * images on T threads, like DaCapo's zxing decodes photographed ones. The images are encoded (and
 * checked decodable) in setup; validation compares every decoded text with what was encoded.
 */
final class ZxingBenchmark implements Benchmark {
    private static final long SEED = 0x5a58494eL;
    private static final BarcodeFormat[] FORMATS = {BarcodeFormat.QR_CODE, BarcodeFormat.DATA_MATRIX,
        BarcodeFormat.AZTEC, BarcodeFormat.PDF_417, BarcodeFormat.CODE_128};
    private static final String ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 -./:";

    private int threads;
    private String[] texts;
    private BarcodeFormat[] formats;
    private RGBLuminanceSource[] images;
    private String[] decoded;

    @Override
    public String name() {
        return "zxing";
    }

    @Override
    public void setup(Size size, Path workDir, int threads) throws Exception {
        this.threads = threads;
        int count = size.pick(200, 4_000, 10_000);
        texts = new String[count];
        formats = new BarcodeFormat[count];
        images = new RGBLuminanceSource[count];
        decoded = new String[count];
        // one seed per image: the set does not depend on how many threads make it
        Workers.run(name(), threads, (worker, workers) -> {
            MultiFormatWriter writer = new MultiFormatWriter();
            MultiFormatReader reader = new MultiFormatReader();
            for (int i = worker; i < count; i += workers) {
                makeImage(i, new Random(SEED + i), writer, reader);
            }
        });
    }

    private void makeImage(int i, Random random, MultiFormatWriter writer, MultiFormatReader reader)
            throws Exception {
        formats[i] = FORMATS[i % FORMATS.length];
        // ZXing's detectors miss a few percent of synthetic symbols (finder-pattern look-alikes in the
        // data); keep only images it can read, so that a miss in an iteration is a real failure.
        for (int attempt = 0; images[i] == null; attempt++) {
            Check.isTrue(attempt < 20, "zxing: cannot make a decodable " + formats[i] + " image");
            int length = formats[i] == BarcodeFormat.CODE_128 ? 8 + random.nextInt(16) : 20 + random.nextInt(120);
            texts[i] = text(random, length);
            RGBLuminanceSource image = render(writer, texts[i], formats[i], random);
            if (texts[i].equals(decode(reader, image, formats[i]))) {
                images[i] = image;
            }
        }
    }

    /** The decoded text, or null if ZXing finds no symbol. */
    private static String decode(MultiFormatReader reader, RGBLuminanceSource image, BarcodeFormat format) {
        Map<DecodeHintType, Object> hints = new EnumMap<>(DecodeHintType.class);
        hints.put(DecodeHintType.POSSIBLE_FORMATS, List.of(format));
        reader.setHints(hints);
        try {
            Result result = reader.decodeWithState(new BinaryBitmap(new HybridBinarizer(image)));
            return result.getBarcodeFormat() == format ? result.getText() : "wrong format " + result.getBarcodeFormat();
        } catch (ReaderException e) {
            return null;
        }
    }

    private static String text(Random random, int length) {
        StringBuilder sb = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            sb.append(ALPHABET.charAt(random.nextInt(ALPHABET.length())));
        }
        return sb.toString().trim() + "#" + length;
    }

    /**
     * Encodes at one pixel per module, then draws each module as a block of pixels inside a quiet zone,
     * under uneven lighting and with grey-level noise, so that the binarizer has real work to do.
     * (ZXing's own scaling leaves no quiet zone around Data Matrix symbols, which its detector then misses.)
     */
    private static RGBLuminanceSource render(MultiFormatWriter writer, String text, BarcodeFormat format,
            Random random) throws Exception {
        Map<EncodeHintType, Object> hints = new EnumMap<>(EncodeHintType.class);
        hints.put(EncodeHintType.MARGIN, 0);
        boolean linear = format == BarcodeFormat.CODE_128;
        BitMatrix matrix = writer.encode(text, format, 0, linear ? 1 : 0, hints);
        int scale = linear ? 3 : 6;
        int margin = 6 * scale;
        int w = matrix.getWidth() * scale + 2 * margin;
        int h = (linear ? 60 : matrix.getHeight() * scale) + 2 * margin;
        int[] pixels = new int[w * h];
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                boolean inside = x >= margin && y >= margin && x < w - margin && y < h - margin;
                boolean dark = inside && matrix.get((x - margin) / scale, linear ? 0 : (y - margin) / scale);
                // noise stays below HybridBinarizer's contrast floor, lighting fades left to right
                int grey = (dark ? 30 : 220) - x * 30 / w + random.nextInt(21) - 10;
                grey = Math.max(0, Math.min(255, grey));
                pixels[y * w + x] = 0xff000000 | grey << 16 | grey << 8 | grey;
            }
        }
        return new RGBLuminanceSource(w, h, pixels);
    }

    @Override
    public void prepareIteration() {
        Arrays.fill(decoded, null);
    }

    @Override
    public void iterate() throws Exception {
        Workers.run(name(), threads, (worker, count) -> {
            MultiFormatReader reader = new MultiFormatReader();
            for (int i = worker; i < images.length; i += count) {
                decoded[i] = decode(reader, images[i], formats[i]);
            }
        });
    }

    @Override
    public void validate() throws Exception {
        for (int i = 0; i < texts.length; i++) {
            Check.isTrue(decoded[i] != null, "zxing image " + i + " (" + formats[i] + ", "
                    + images[i].getWidth() + "x" + images[i].getHeight() + ") not decoded");
            Check.equal("zxing image " + i + " (" + formats[i] + ") text", texts[i], decoded[i]);
        }
    }
}
