package org.jvmos.workloads.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The chat server's protocol and bounds, and the load generator's checks. */
class ChatTest {

    static ChatHub hub;

    @BeforeAll
    static void start() throws IOException {
        hub = ChatHub.start(0, 256, Spawner.platform());
    }

    @AfterAll
    static void stop() {
        hub.close();
    }

    /** Runs ChatLoad in process: {rc, stdout, stderr}. */
    static String[] load(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = new ChatLoad().run(args, new PrintStream(out, true), new PrintStream(err, true));
        return new String[] {Integer.toString(rc), out.toString(StandardCharsets.UTF_8),
            err.toString(StandardCharsets.UTF_8)};
    }

    static long field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":(\\d+)").matcher(json);
        assertTrue(m.find(), name + " in " + json);
        return Long.parseLong(m.group(1));
    }

    static void assertOneErrorLine(String err) {
        assertTrue(err.startsWith("error: "), err);
        assertEquals(1, err.strip().split("\n").length, err);
    }

    /** Waits (boundedly) until the hub has let go of every connection. */
    static void awaitIdle(ChatHub h) throws InterruptedException {
        for (int i = 0; i < 200 && h.liveConnections() > 0; i++) {
            Thread.sleep(10);
        }
        assertEquals(0, h.liveConnections());
    }

    static String[] smallLoad(int port, int rooms, int users, int messages) {
        return load("--port", Integer.toString(port), "--rooms", Integer.toString(rooms),
                "--users-per-room", Integer.toString(users), "--messages",
                Integer.toString(messages), "--max-seconds", "10");
    }

    @Test
    void everyMessageReachesEveryMemberOfItsRoomOnce() {
        String[] r = smallLoad(hub.port(), 2, 5, 5);
        assertEquals("0", r[0], r[2]);
        assertEquals("", r[2]);
        String json = r[1].strip();
        assertTrue(json.startsWith("{\"workload\":\"chat-load\""), json);
        assertEquals(2 * 5 * 5 * 5, field(json, "deliveries"));
        assertEquals(2 * 5 * 5, field(json, "messages_sent"));
        assertEquals(0, field(json, "lost"));
        assertEquals(0, field(json, "duplicated"));
        assertEquals(0, field(json, "wrong_room"));
        assertTrue(json.contains("\"latency_us\":{\"p50\":"), json);
        assertTrue(json.contains(",\"n\":50}"), json);          // every message reached its whole room
        assertTrue(json.contains(",\"n\":250}"), json);         // every single delivery
        assertTrue(json.contains("\"stopped_by\":\"done\""), json);
    }

    /**
     * Open loop: 2 rooms of 4 users send 10 messages each at 50 a second (0.2 s of schedule),
     * whether or not the earlier ones came back; every message still reaches its whole room,
     * the load lasts at least the schedule, and the report names the rate.
     */
    @Test
    void anOpenLoopSendsOnItsScheduleAndDeliversEverything() {
        long t0 = System.nanoTime();
        String[] r = load("--port", Integer.toString(hub.port()), "--rooms", "2",
                "--users-per-room", "4", "--messages", "10", "--rate", "50");
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals("0", r[0], r[2]);
        String json = r[1].strip();
        assertEquals(2 * 4 * 10 * 4, field(json, "deliveries"));
        assertEquals(0, field(json, "lost"));
        assertTrue(json.contains("\"rate_per_user\":50.000"), json);
        assertTrue(json.contains("\"sends_late\":"), json);
        assertTrue(ms >= 180, "9 intervals of 20 ms are the schedule, took " + ms + " ms");
        String[] bad = load("--port", Integer.toString(hub.port()), "--rate", "fast");
        assertEquals("2", bad[0]);
        assertOneErrorLine(bad[2]);
        bad = load("--port", Integer.toString(hub.port()), "--rate", "5", "--pause-ms", "3");
        assertEquals("2", bad[0]);
    }

    /** A read that times out in the middle of a frame keeps what it read: the open loop reads
     * until its next send is due, and the rest of that frame comes with the next read. */
    @Test
    void aTimeoutInTheMiddleOfAFrameKeepsItsStart() throws IOException {
        byte[][] parts = {"JOINED r0 u1\nMSG r0 u1 ".getBytes(StandardCharsets.US_ASCII), null,
            "12 34\n".getBytes(StandardCharsets.US_ASCII)};
        java.io.InputStream in = new java.io.InputStream() {
            int k;

            @Override
            public int read() {
                throw new UnsupportedOperationException();
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                if (k >= parts.length) {
                    return -1;
                }
                byte[] p = parts[k++];
                if (p == null) {
                    throw new java.net.SocketTimeoutException("timed out");
                }
                System.arraycopy(p, 0, b, off, p.length);
                return p.length;
            }
        };
        FrameReader r = new FrameReader(in, 100);
        int first = r.next();
        assertEquals("JOINED r0 u1", new String(r.frame(), 0, first, StandardCharsets.US_ASCII));
        assertThrows(java.net.SocketTimeoutException.class, r::next);
        int n = r.next();
        assertEquals("MSG r0 u1 12 34", new String(r.frame(), 0, n, StandardCharsets.US_ASCII));
        assertEquals(-1, r.next());
    }

    @Test
    void oneServerServesSequentialLoads() throws InterruptedException {
        awaitIdle(hub);
        long conns = hub.connections();
        long in = hub.messagesIn();
        for (int round = 0; round < 2; round++) {
            String[] r = smallLoad(hub.port(), 2, 3, 4);
            assertEquals("0", r[0], r[2]);
            assertEquals(2 * 3 * 4 * 3, field(r[1], "deliveries"));
            awaitIdle(hub);
        }
        assertEquals(conns + 2 * 6, hub.connections());
        assertEquals(in + 2 * 24, hub.messagesIn());
    }

    /**
     * Many short loads: each user is released by its JOINED ack, so a message sent right after
     * the last ack must still reach the user that got it (the ack and the membership are one
     * step for broadcasters).
     */
    @Test
    void noMessageIsLostToAJoinInProgress() {
        for (int i = 0; i < 40; i++) {
            String[] r = smallLoad(hub.port(), 2, 4, 1);
            assertEquals("0", r[0], "round " + i + ": " + r[2]);
        }
    }

    @Test
    void aClosedPortIsOneErrorLine() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            port = s.getLocalPort();
        }
        String[] r = smallLoad(port, 1, 2, 1);
        assertEquals("1", r[0]);
        assertOneErrorLine(r[2]);
        assertTrue(r[2].startsWith("error: cannot connect to 127.0.0.1:" + port + ": "), r[2]);
        assertEquals("", r[1]);
    }

    @Test
    void badUsageExitsTwo() {
        String port = Integer.toString(hub.port());
        String[][] bad = {
            {"--port", port, "--rooms", "0"},
            {"--port", port, "--host", "8.8.8.8"},
            {"--port", port, "--message-bytes", "3"},
            {"--port", port, "--users-per-room", "-1"},
            {"--port", port, "--rooms", "200", "--users-per-room", "100"},
            {"--rooms", "1"},
            {"--port", port, "--speed", "9"},
        };
        for (String[] args : bad) {
            String[] r = load(args);
            assertEquals("2", r[0], String.join(" ", args) + ": " + r[2]);
            assertOneErrorLine(r[2]);
            assertEquals("", r[1]);
        }
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = new ChatServer().run(new String[] {"--threads", "green"}, new PrintStream(
                new ByteArrayOutputStream()), new PrintStream(err, true));
        assertEquals(2, rc);
        assertOneErrorLine(err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void virtualThreadsOnJdk21OrAUsageError() throws Exception {
        if (Runtime.version().feature() >= 21) {
            try (ChatHub v = ChatHub.start(0, 64, ChatServer.spawner("virtual"))) {
                assertEquals("virtual", v.mode());
                String[] r = smallLoad(v.port(), 2, 3, 3);
                assertEquals("0", r[0], r[2]);
                assertEquals(2 * 3 * 3 * 3, field(r[1], "deliveries"));
                assertEquals(1 + 2 * 6, v.threadsMax());
            }
        } else {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int rc = new ChatServer().run(new String[] {"--threads", "virtual"},
                    new PrintStream(out, true), new PrintStream(err, true));
            assertEquals(2, rc);
            String e = err.toString(StandardCharsets.UTF_8);
            assertOneErrorLine(e);
            assertTrue(e.startsWith("error: --threads virtual needs JDK 21 or later (this is "), e);
            assertEquals("", out.toString(StandardCharsets.UTF_8));
        }
    }

    /** Reads until the server closes; fails the test if it does not within 5 s. */
    static void assertClosedByServer(Socket s) throws IOException {
        s.setSoTimeout(5000);
        InputStream in = s.getInputStream();
        byte[] buf = new byte[4096];
        while (true) {
            int n;
            try {
                n = in.read(buf);
            } catch (IOException e) {
                return;                     // reset: closed as well
            }
            if (n < 0) {
                return;
            }
        }
    }

    @Test
    void malformedFramesDropTheConnectionNotTheServer() throws IOException {
        String[] frames = {"HELLO\n", "MSG r0 before joining\n", "JOIN r0\n",
            "JOIN r0 u0\nMSG r1 another room\n", "JOIN r0 u0\nJOIN r0 u0\n"};
        for (String f : frames) {
            long before = hub.malformed();
            try (Socket s = new Socket(InetAddress.getByName("127.0.0.1"), hub.port())) {
                OutputStream o = s.getOutputStream();
                o.write(f.getBytes(StandardCharsets.UTF_8));
                o.flush();
                assertClosedByServer(s);
            }
            assertEquals(before + 1, hub.malformed(), f);
        }
        try (Socket s = new Socket(InetAddress.getByName("127.0.0.1"), hub.port())) {
            long before = hub.malformed();
            OutputStream o = s.getOutputStream();
            o.write(new byte[ChatHub.MAX_FRAME + 10]);           // no newline within the limit
            o.flush();
            assertClosedByServer(s);
            assertEquals(before + 1, hub.malformed());
        } catch (IOException e) {
            // the server may close before the whole write is taken: still dropped
        }
        assertEquals("0", smallLoad(hub.port(), 1, 2, 2)[0]);
    }

    @Test
    void joinIsAckedAndByeEndsTheConnection() throws IOException {
        try (Socket s = new Socket(InetAddress.getByName("127.0.0.1"), hub.port())) {
            OutputStream o = s.getOutputStream();
            o.write("JOIN lonely alice\nMSG lonely hello, me\nBYE\n".getBytes(StandardCharsets.UTF_8));
            o.flush();
            s.setSoTimeout(5000);
            String got = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals("JOINED lonely 1\nMSG lonely hello, me\n", got);
        }
    }

    @Test
    void serverProgramAnnouncesItsPortAndPrintsItsSummary(@TempDir Path dir) throws Exception {
        Path portFile = dir.resolve("chat.port");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int[] rc = {-1};
        Thread server = new Thread(() -> rc[0] = new ChatServer().run(new String[] {"--port", "0",
            "--port-file", portFile.toString(), "--max-seconds", "2"}, new PrintStream(out, true),
            new PrintStream(err, true)));
        server.start();
        for (int i = 0; i < 500 && !Files.exists(portFile); i++) {
            Thread.sleep(5);
        }
        int port = Integer.parseInt(Files.readString(portFile).strip());
        String[] r = smallLoad(port, 1, 3, 2);
        assertEquals("0", r[0], r[2]);
        server.join(10_000);
        assertFalse(server.isAlive());
        assertEquals(0, rc[0], err.toString(StandardCharsets.UTF_8));
        String[] lines = out.toString(StandardCharsets.UTF_8).strip().split("\n");
        assertEquals("PORT " + port, lines[0]);
        String json = lines[lines.length - 1];
        assertTrue(json.startsWith("{\"workload\":\"chat-server\",\"threads\":\"platform\""), json);
        assertEquals(3, field(json, "connections"));
        assertEquals(6, field(json, "messages_in"));
        assertEquals(3 + 18, field(json, "frames_out"));          // 3 JOINED + 6 messages x 3
        assertEquals(7, field(json, "max_threads_live"));
        assertTrue(json.contains("\"stopped_by\":\"max-seconds\""), json);
    }

    @Test
    void aServerThatLosesMessagesFailsAtTheTimeBound() throws Exception {
        // a fake server: acks every JOIN, never broadcasts
        try (ServerSocket fake = new ServerSocket(0, 16, InetAddress.getByName("127.0.0.1"))) {
            Thread acceptor = new Thread(() -> {
                try {
                    while (true) {
                        Socket s = fake.accept();
                        Thread t = new Thread(() -> {
                            try (s) {
                                FrameReader in = new FrameReader(s.getInputStream(), 1024);
                                int n = in.next();
                                String room = new String(in.frame(), 0, n, StandardCharsets.UTF_8).split(" ")[1];
                                s.getOutputStream().write(("JOINED " + room + " 1\n").getBytes(StandardCharsets.UTF_8));
                                while (in.next() >= 0) {
                                    // swallow
                                }
                            } catch (IOException e) {
                                // the load closed it
                            }
                        });
                        t.setDaemon(true);
                        t.start();
                    }
                } catch (IOException e) {
                    // closed
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
            long t0 = System.nanoTime();
            String[] r = load("--port", Integer.toString(fake.getLocalPort()), "--rooms", "1",
                    "--users-per-room", "2", "--messages", "1", "--max-seconds", "1");
            assertTrue(System.nanoTime() - t0 < 5_000_000_000L);
            assertEquals("1", r[0]);
            assertOneErrorLine(r[2]);
            assertTrue(r[2].startsWith("error: --max-seconds 1 reached with 4 of 4 deliveries missing"), r[2]);
            assertEquals(4, field(r[1], "lost"));
            assertTrue(r[1].contains("\"stopped_by\":\"max-seconds\""), r[1]);
        }
    }
}
