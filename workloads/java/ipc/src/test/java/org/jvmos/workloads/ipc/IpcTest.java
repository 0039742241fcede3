package org.jvmos.workloads.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Client and server of every primitive in process: answers, validation, failures. */
class IpcTest {

    static final Map<Primitive, Endpoint> SERVERS = new EnumMap<>(Primitive.class);

    @BeforeAll
    static void start() throws IOException {
        IpcServer.quietCommonsLogging();
        for (Primitive p : Primitive.values()) {
            SERVERS.put(p, Endpoint.start(p, 0, new ServerLogic(ServerLogic.DEFAULT_GRAB_SIZE),
                    Endpoint.Options.defaults()));
        }
    }

    @AfterAll
    static void stop() {
        for (Endpoint e : SERVERS.values()) {
            e.close();
        }
    }

    /** Runs a program in process: {rc, stdout, stderr}. */
    static String[] run(org.jvmos.workloads.Workload w, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = w.run(args, new PrintStream(out, true), new PrintStream(err, true));
        return new String[] {Integer.toString(rc), out.toString(StandardCharsets.UTF_8),
            err.toString(StandardCharsets.UTF_8)};
    }

    static String[] client(String... args) {
        return run(new IpcClient(), args);
    }

    static String[] trial(Primitive p, int port, Benchmark b, int size, int calls, String... more) {
        String[] base = {"--primitive", p.label, "--port", Integer.toString(port), "--benchmark", b.name(),
            "--size", Integer.toString(size), "--calls", Integer.toString(calls), "--max-seconds", "20"};
        String[] all = new String[base.length + more.length];
        System.arraycopy(base, 0, all, 0, base.length);
        System.arraycopy(more, 0, all, base.length, more.length);
        return client(all);
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

    static int closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return s.getLocalPort();
        }
    }

    @ParameterizedTest
    @EnumSource(Primitive.class)
    void everyBenchmarkAnswersThreeValidatedCalls(Primitive p) {
        int port = SERVERS.get(p).port();
        for (Benchmark b : Benchmark.values()) {
            String[] r = trial(p, port, b, 5, 3);
            assertEquals("0", r[0], p.label + " " + b + ": " + r[2]);
            assertEquals("", r[2]);
            String json = r[1].strip();
            assertEquals(1, json.split("\n").length, json);
            assertTrue(json.startsWith("{\"workload\":\"ipc-client\",\"primitive\":\"" + p.label
                    + "\",\"benchmark\":\"" + b.name() + "\""), json);
            assertEquals(3, field(json, "calls"));
            assertEquals(3, field(json, "validated"));
            assertTrue(field(json, "language_ns") > 0, json);
            assertTrue(field(json, "language_incl_connect_ns") >= field(json, "language_ns"), json);
            assertTrue(field(json, "bytes_sent_app") > 0, json);
            assertTrue(field(json, "bytes_received_app") > 0, json);
            assertFalse(json.contains("per_call_ns"), json);
        }
    }

    @ParameterizedTest
    @EnumSource(Primitive.class)
    void largerVectorsAndPerCallTimes(Primitive p) {
        int port = SERVERS.get(p).port();
        for (Benchmark b : new Benchmark[] {Benchmark.VV, Benchmark.REV, Benchmark.SV, Benchmark.GCD}) {
            String[] r = trial(p, port, b, 500, 2, "--per-call", "--seed", "7");
            assertEquals("0", r[0], p.label + " " + b + ": " + r[2]);
            assertTrue(Pattern.compile("\"per_call_ns\":\\[\\d+,\\d+\\]\\}$").matcher(r[1].strip()).find(), r[1]);
        }
    }

    @Test
    void socketStreamOptions() {
        for (Primitive p : new Primitive[] {Primitive.SOCKETS, Primitive.SOCKETS_TEXT}) {
            String[] r = trial(p, SERVERS.get(p).port(), Benchmark.VV, 50, 3, "--buffer", "65536", "--tcp-nodelay");
            assertEquals("0", r[0], r[2]);
            assertTrue(r[1].contains("\"buffer\":65536,\"tcp_nodelay\":true"), r[1]);
        }
    }

    @Test
    void theServerCountsItsCalls() {
        Endpoint e = SERVERS.get(Primitive.SOCKETS);
        long before = e.logic.calls();
        long conns = e.connections.get();
        assertEquals("0", trial(Primitive.SOCKETS, e.port(), Benchmark.SS, 5, 4)[0]);
        assertEquals(before + 4, e.logic.calls());
        assertEquals(conns + 1, e.connections.get());          // one connection per trial
    }

    @ParameterizedTest
    @EnumSource(Primitive.class)
    void aClosedPortIsOneErrorLine(Primitive p) throws IOException {
        int port = closedPort();
        String[] r = trial(p, port, Benchmark.SS, 5, 3);
        assertEquals("1", r[0], r[2]);
        assertOneErrorLine(r[2]);
        assertTrue(r[2].startsWith("error: cannot connect to 127.0.0.1:" + port + ": "), r[2]);
        assertEquals("", r[1]);
    }

    @Test
    void anUnknownBenchmarkIsAUsageError() {
        String[] r = client("--primitive", "sockets", "--port", "1", "--benchmark", "PING");
        assertEquals("2", r[0]);
        assertOneErrorLine(r[2]);
        assertTrue(r[2].contains("unknown benchmark 'PING' (known: SS SV VS VV GRAB FACT GCD REV)"), r[2]);
        assertEquals("", r[1]);
    }

    @Test
    void badUsageExitsTwo() {
        String[][] bad = {
            {"--primitive", "rmi", "--port", "1", "--benchmark", "SS"},
            {"--port", "1", "--benchmark", "SS"},
            {"--primitive", "sockets", "--benchmark", "SS"},
            {"--primitive", "sockets", "--port", "1", "--benchmark", "SS", "--size", "0"},
            {"--primitive", "sockets", "--port", "1", "--benchmark", "SS", "--calls", "0"},
            {"--primitive", "xmlrpc", "--port", "1", "--benchmark", "SS", "--buffer", "1024"},
            {"--primitive", "xmlrpc", "--port", "1", "--benchmark", "SS", "--tcp-nodelay"},
            {"--primitive", "sockets", "--port", "1", "--benchmark", "SS", "--speed", "2"},
        };
        for (String[] args : bad) {
            String[] r = client(args);
            assertEquals("2", r[0], String.join(" ", args) + ": " + r[2]);
            assertOneErrorLine(r[2]);
            assertEquals("", r[1]);
        }
        String[] r = run(new IpcServer(), "--primitive", "corba");
        assertEquals("2", r[0]);
        assertOneErrorLine(r[2]);
    }

    @ParameterizedTest
    @EnumSource(Primitive.class)
    void aWrongAnswerIsDetected(Primitive p) throws IOException {
        for (Benchmark b : new Benchmark[] {Benchmark.SS, Benchmark.VV}) {
            ServerLogic broken = new ServerLogic(100);
            broken.breakCall(2);
            try (Endpoint e = Endpoint.start(p, 0, broken, Endpoint.Options.defaults())) {
                String[] r = trial(p, e.port(), b, 5, 3);
                assertEquals("1", r[0], r[2]);
                assertOneErrorLine(r[2]);
                assertTrue(r[2].startsWith("error: wrong answer to call 2 of 3 of " + b.name() + " ("
                        + p.label + ", size 5): "), r[2]);
                assertEquals("", r[1]);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Primitive.class)
    void aCallTheServerFailsIsOneErrorLine(Primitive p) throws IOException {
        try (Endpoint e = Endpoint.start(p, 0, new ServerLogic(1), Endpoint.Options.defaults())) {
            // the client picks GRAB indices in [0, 100000): the server's vector has one element
            String[] r = trial(p, e.port(), Benchmark.GRAB, 5, 3);
            assertEquals("1", r[0], r[2]);
            assertOneErrorLine(r[2]);
            assertTrue(r[2].startsWith("error: the server failed call 1 of 3 of GRAB: "), r[2]);
            assertTrue(r[2].contains("outside the server's vector [0, 1)"), r[2]);
            assertEquals(1, e.logic.failures());
        }
    }

    @ParameterizedTest
    @EnumSource(value = Primitive.class, names = {"SOCKETS", "XMLRPC"})
    void aPortInUseIsOneErrorLine(Primitive p) {
        int port = SERVERS.get(p).port();
        long t0 = System.nanoTime();
        String[] r = run(new IpcServer(), "--primitive", p.label, "--port", Integer.toString(port),
                "--max-seconds", "5");
        assertTrue(System.nanoTime() - t0 < 3_000_000_000L, "failed at once");
        assertEquals("1", r[0], r[2]);
        assertOneErrorLine(r[2]);
        assertTrue(r[2].startsWith("error: cannot listen on 127.0.0.1:" + port + " (" + p.label + "): "), r[2]);
        assertEquals("", r[1]);
    }

    @ParameterizedTest
    @EnumSource(value = Primitive.class, names = {"SOCKETS", "XMLRPC"})
    void theServerProgramWritesItsPortAndItsSummary(Primitive p, @TempDir Path dir) throws Exception {
        Path portFile = dir.resolve("ipc.port");
        String[][] result = new String[1][];
        Thread server = new Thread(() -> result[0] = run(new IpcServer(), "--primitive", p.label,
                "--port", "0", "--port-file", portFile.toString(), "--max-seconds", "1"));
        server.start();
        for (int i = 0; i < 400 && !Files.exists(portFile); i++) {
            Thread.sleep(5);
        }
        int port = Integer.parseInt(Files.readString(portFile).strip());
        String[] r = trial(p, port, Benchmark.REV, 5, 3);
        assertEquals("0", r[0], r[2]);
        server.join(10_000);
        assertFalse(server.isAlive());
        assertEquals("0", result[0][0], result[0][2]);
        String[] lines = result[0][1].strip().split("\n");
        assertEquals("PORT " + port, lines[0]);
        String json = lines[lines.length - 1];
        assertTrue(json.startsWith("{\"workload\":\"ipc-server\",\"primitive\":\"" + p.label + "\""), json);
        assertEquals(3, field(json, "calls"));
        assertEquals(0, field(json, "failed_calls"));
        assertEquals(p == Primitive.XMLRPC ? 3 : 1, field(json, "connections"), json);
        assertTrue(json.contains("\"stopped_by\":\"max-seconds\""), json);
        assertTrue(json.contains("\"library\":\"" + (p == Primitive.XMLRPC ? "apache-xmlrpc 3.1.3" : "java.net")
                + "\""), json);
    }

    @Test
    void clientAndServerAgreeOnFactorsAndGrab() {
        for (int n = 1; n <= 5000; n++) {
            assertEquals(java.util.Arrays.toString(Expect.divisors(n)),
                    java.util.Arrays.toString(ServerLogic.factors(n)), "n=" + n);
        }
        assertEquals("[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, "
                + "131072, 262144, 524288, 1048576, 2097152, 4194304, 8388608, 16777216]",
                java.util.Arrays.toString(Expect.divisors(ServerLogic.FACT_MAX)));
        ServerLogic logic = new ServerLogic(10);
        for (int i = 0; i < 10; i++) {
            assertEquals(ServerLogic.grabValue(i), logic.grab(i));
            assertTrue(ServerLogic.grabValue(i) >= 0);
        }
    }

    @Test
    void textLinesSurviveWriteCharsAndReadLine() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        java.io.DataOutputStream out = new java.io.DataOutputStream(bytes);
        TextCodec.write(out, TextCodec.request(Benchmark.VV, new int[] {0, -7, 2147483647, -2147483648}));
        TextCodec.write(out, TextCodec.failure("GRAB: no\nway"));
        assertEquals(2 * ("VV 0 -7 2147483647 -2147483648\n".length() + "! GRAB: no way\n".length()), bytes.size());
        java.io.DataInputStream in = new java.io.DataInputStream(new java.io.ByteArrayInputStream(bytes.toByteArray()));
        String line = TextCodec.read(in);
        assertEquals("VV", TextCodec.head(line));
        assertEquals("[0, -7, 2147483647, -2147483648]", java.util.Arrays.toString(TextCodec.ints(line)));
        String failure = TextCodec.read(in);
        assertEquals("!", TextCodec.head(failure));
        assertEquals("GRAB: no way", TextCodec.rest(failure));
        assertEquals(null, TextCodec.read(in));
    }
}
