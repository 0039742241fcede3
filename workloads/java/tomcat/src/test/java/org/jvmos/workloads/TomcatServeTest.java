package org.jvmos.workloads;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class TomcatServeTest {

    @Test
    void servesExactPagesAndStopsAtMaxRequests(@TempDir Path tmp) throws Exception {
        Path portFile = tmp.resolve("port");
        ByteArrayOutputStream serverOut = new ByteArrayOutputStream();
        ByteArrayOutputStream serverErr = new ByteArrayOutputStream();
        AtomicInteger serverRc = new AtomicInteger(-1);
        Thread server = new Thread(() -> {
            try (PrintStream o = new PrintStream(serverOut, true, StandardCharsets.UTF_8);
                 PrintStream e = new PrintStream(serverErr, true, StandardCharsets.UTF_8)) {
                serverRc.set(new TomcatServe().run(new String[] {"--page-bytes", "10240", "--max-requests", "5",
                        "--max-seconds", "20", "--port-file", portFile.toString()}, o, e));
            }
        });
        server.start();

        long deadline = System.nanoTime() + 15_000_000_000L;
        while (!Files.exists(portFile) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertTrue(Files.exists(portFile), "port file not written");
        int port = Integer.parseInt(Files.readString(portFile).strip());
        assertTrue(port > 0);
        assertFalse(Files.exists(tmp.resolve("port.tmp")));

        ByteArrayOutputStream clientOut = new ByteArrayOutputStream();
        ByteArrayOutputStream clientErr = new ByteArrayOutputStream();
        int clientRc;
        try (PrintStream o = new PrintStream(clientOut, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(clientErr, true, StandardCharsets.UTF_8)) {
            clientRc = new PageClient().run(new String[] {"--port", Integer.toString(port), "--requests", "5",
                    "--max-seconds", "10", "--expect-bytes", "10240"}, o, e);
        }
        String client = clientOut.toString(StandardCharsets.UTF_8).strip();
        assertEquals(0, clientRc, client + "\n" + clientErr);
        assertTrue(client.contains("\"requests\":5,\"errors\":0,\"bytes\":51200"), client);

        server.join(20_000);
        assertFalse(server.isAlive(), "server did not stop after max-requests");
        assertEquals(0, serverRc.get(), serverErr.toString(StandardCharsets.UTF_8));
        String[] lines = serverOut.toString(StandardCharsets.UTF_8).strip().split("\n");
        assertEquals("PORT " + port, lines[0]);
        String last = lines[lines.length - 1];
        assertTrue(last.startsWith("{\"workload\":\"tomcat\",\"requests\":5,\"bytes\":51200,"), last);
        assertTrue(last.contains("\"stopped_by\":\"max-requests\""), last);
    }

    @Test
    void pageHasExactSize() {
        for (int n : new int[] {1, 10, 99, 100, 120, 1000, 10240, 65536}) {
            byte[] page = TomcatServe.makePage(n);
            assertEquals(n, page.length);
        }
        String p = new String(TomcatServe.makePage(10240), StandardCharsets.US_ASCII);
        assertTrue(p.startsWith("<!DOCTYPE html>") && p.endsWith("</body></html>\n"));
        assertEquals(p, new String(TomcatServe.makePage(10240), StandardCharsets.US_ASCII));
    }

    @Test
    void badArgumentsExitWithStatus2() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try (PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
             PrintStream o = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8)) {
            assertEquals(2, new TomcatServe().run(new String[] {"--page-bytes", "ten"}, o, e));
            assertEquals(2, new TomcatServe().run(new String[] {"--nope"}, o, e));
            assertEquals(2, new PageClient().run(new String[] {"--requests", "3"}, o, e)); // --port required
        }
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("error: bad number for --page-bytes"));
    }
}
