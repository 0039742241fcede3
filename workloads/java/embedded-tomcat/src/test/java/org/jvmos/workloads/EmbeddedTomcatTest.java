package org.jvmos.workloads;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class EmbeddedTomcatTest {

    /** IPv4 127.0.0.1 as /proc/net/tcp writes it, and the same as an IPv4-mapped IPv6 address. */
    private static final List<String> LOOPBACK = List.of("0100007F", "0000000000000000FFFF00000100007F");

    @Test
    void servesOnLoopbackOnlyAnnouncesItsPortAndStops(@TempDir Path tmp) throws Exception {
        Path base = Files.createDirectory(tmp.resolve("base"));
        EmbeddedTomcat tomcat = new EmbeddedTomcat(base, 0);
        tomcat.serve("/hello", "hello", new Hello());
        tomcat.start();
        int port;
        try {
            port = tomcat.port();
            assertTrue(port > 0, "port " + port);

            ByteArrayOutputStream out = new ByteArrayOutputStream();
            Path portFile = tmp.resolve("port");
            EmbeddedTomcat.announce(port, portFile.toString(), new PrintStream(out, true, StandardCharsets.UTF_8));
            assertEquals("PORT " + port + System.lineSeparator(), out.toString(StandardCharsets.UTF_8));
            assertEquals(port + "\n", Files.readString(portFile));
            assertFalse(Files.exists(tmp.resolve("port.tmp")));

            HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + port + "/hello")
                    .toURL().openConnection();
            assertEquals(200, c.getResponseCode());
            assertEquals("hi", new String(c.getInputStream().readAllBytes(), StandardCharsets.US_ASCII));

            List<String> listening = listeningAddresses(port);
            assertFalse(listening.isEmpty(), "no listening socket on port " + port);
            for (String address : listening) {
                assertTrue(LOOPBACK.contains(address), "listens on " + address + ", not only 127.0.0.1");
            }
        } finally {
            tomcat.stop();
        }
        assertTrue(listeningAddresses(port).isEmpty(), "still listening after stop()");

        EmbeddedTomcat.deleteBaseDir(base);
        assertFalse(Files.exists(base));
    }

    /** The local addresses (hex, as the kernel prints them) of the sockets listening on {@code port}. */
    private static List<String> listeningAddresses(int port) throws IOException {
        List<String> found = new ArrayList<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path p = Paths.get(table);
            if (!Files.exists(p)) {
                continue;
            }
            List<String> lines = Files.readAllLines(p);
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.trim().split("\\s+");
                String[] local = f[1].split(":");
                if (f[3].equals("0A") && Integer.parseInt(local[1], 16) == port) { // 0A = LISTEN
                    found.add(local[0]);
                }
            }
        }
        return found;
    }

    static final class Hello extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            resp.setContentType("text/plain");
            resp.getOutputStream().write("hi".getBytes(StandardCharsets.US_ASCII));
        }
    }
}
