import java.io.FileOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;

/** Waits until the file GO exists (at most 600 s), then writes N arrays of SIZE bytes to
 * /dev/null with FileOutputStream.write(byte[]): each is one jni_GetByteArrayRegion (libjava's
 * writeBytes copies the array into a native buffer) and one write(2). Prints "done N" and
 * exits. Prints "waiting for GO" to stderr once it waits. Args: GO N SIZE. The witness tests
 * count those copies two ways. */
public class GatedWrites {
    public static void main(String[] args) throws Exception {
        Path go = Path.of(args[0]);
        int n = Integer.parseInt(args[1]);
        byte[] b = new byte[Integer.parseInt(args[2])];
        long deadline = System.nanoTime() + 600_000_000_000L;
        // start-up is over: a witness attached after this line counts only the gated copies
        // (and this line's own copy is before it)
        System.err.println("waiting for " + go);
        System.err.flush();
        while (!Files.exists(go)) {
            if (System.nanoTime() > deadline) {
                System.err.println("no " + go + " within 600 s");
                System.exit(2);
            }
            Thread.sleep(20);
        }
        try (FileOutputStream out = new FileOutputStream("/dev/null")) {
            for (int i = 0; i < n; i++) {
                out.write(b);
            }
        }
        System.out.println("done " + n);
    }
}
