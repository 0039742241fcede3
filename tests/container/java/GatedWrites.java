/** A bounded host program for the container tests: waits for a line on stdin, then writes
 * COUNT arrays of 10 bytes to /dev/null with FileOutputStream.write(byte[]) (each one JNI
 * copy and one write(2)), prints "done", and exits at the next line (or end) of stdin.
 * Its writes are exactly COUNT, so that two recordings of it can be compared exactly.
 * Args: COUNT. */
import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.InputStreamReader;

public class GatedWrites {
    public static void main(String[] args) throws Exception {
        int count = Integer.parseInt(args[0]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        in.readLine();
        byte[] b = new byte[10];
        try (FileOutputStream out = new FileOutputStream("/dev/null")) {
            for (int i = 0; i < count; i++) {
                out.write(b);
            }
        }
        System.out.println("done");
        System.out.flush();
        in.readLine();
    }
}
