package org.jvmos.workloads.shop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.jvmos.workloads.EmbeddedTomcat;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The shop's pages, its database and cache, and the load generator's bounds. */
class ShopTest {

    static final int PAGE = 20_000;
    static Database db;
    static Store store;
    static ShopServlet servlet;
    static EmbeddedTomcat tomcat;
    static Path base;
    static int port;

    @BeforeAll
    static void start() throws Exception {
        db = new Database();
        store = new Store(db);
        servlet = new ShopServlet(store, PAGE, 0, () -> { });
        base = Files.createTempDirectory("shop-test-");
        tomcat = new EmbeddedTomcat(base, 0);
        port = ShopServer.start(tomcat, servlet, 50, 4);
    }

    @AfterAll
    static void stop() throws Exception {
        tomcat.stop();
        db.close();
    }

    /** GET with an optional cookie; returns {status, body, set-cookie}. */
    static String[] get(String path, String cookie) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL("http://127.0.0.1:" + port + path).openConnection();
        if (cookie != null) {
            c.setRequestProperty("Cookie", cookie);
        }
        int status = c.getResponseCode();
        InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream();
        String body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        String set = c.getHeaderField("Set-Cookie");
        return new String[] {Integer.toString(status), body, set == null ? cookie : set.split(";", 2)[0]};
    }

    @Test
    void databaseHoldsTheSeededCatalog() {
        assertEquals(5, store.categories().size());
        int products = 0;
        int items = 0;
        for (Catalog.Category c : store.categories()) {
            for (Catalog.Product p : store.productsOf(c.id())) {
                products++;
                items += store.itemsOf(p.id()).size();
            }
        }
        assertEquals(16, products);
        assertEquals(28, items);
        assertEquals(new BigDecimal("193.50"), store.item("EST-18").orElseThrow().listPrice());
        assertTrue(store.signOn(Database.USER, Database.PASSWORD).isPresent());
        assertFalse(store.signOn(Database.USER, "wrong").isPresent());
    }

    @Test
    void catalogReadsAreCached() {
        store.product("FI-FW-02");
        long before = store.queries();
        for (int i = 0; i < 100; i++) {
            store.product("FI-FW-02");
            store.itemsOf("FI-FW-02");
        }
        assertTrue(store.queries() - before <= 1, "the cache must answer repeated catalog reads");
    }

    @Test
    void pagesRenderTheirContentAndArePadded() throws IOException {
        String[] home = get("/", null);
        assertEquals("200", home[0]);
        assertTrue(home[1].contains("/category?id=REPTILES"));
        assertTrue(home[1].getBytes(StandardCharsets.UTF_8).length >= PAGE);
        String[] cat = get("/category?id=CATS", null);
        assertTrue(cat[1].contains("Manx") && cat[1].contains("Persian"));
        assertFalse(cat[1].contains("Poodle"));
        String[] item = get("/item?id=EST-16", null);
        assertTrue(item[1].contains("$93.50") && item[1].contains("Adult Female Persian"));
        assertEquals("404", get("/item?id=NOPE", null)[0]);
        assertEquals("404", get("/nowhere", null)[0]);
    }

    @Test
    void cartSignOnAndOrderGoThroughTheDatabase() throws IOException {
        int before = store.inventory("EST-6");
        String[] r = get("/cart?add=EST-6", null);
        String cookie = r[2];
        r = get("/cart?add=EST-6", cookie);
        assertTrue(r[1].contains("<td>EST-6</td><td>2</td>"), r[1].substring(0, 600));
        assertTrue(r[1].contains("Sub Total: $37.00"));
        assertTrue(get("/order/new", cookie)[1].contains("Please sign on"));
        assertTrue(get("/signon?username=j2ee&password=j2ee", cookie)[1].contains("Welcome ABC"));
        r = get("/order/new", cookie);
        assertTrue(r[1].contains("total $37.00"), r[1].substring(0, 600));
        assertEquals(before - 2, store.inventory("EST-6"));
        assertTrue(get("/orders", cookie)[1].contains("$37.00"));
        assertTrue(get("/cart", cookie)[1].contains("Sub Total: $0"));
    }

    static String[] load(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = new ShopLoad().run(args, new PrintStream(out), new PrintStream(err));
        return new String[] {Integer.toString(rc), out.toString(StandardCharsets.UTF_8),
            err.toString(StandardCharsets.UTF_8)};
    }

    @Test
    void loadGeneratorStopsAtItsCount() {
        String[] r = load("--port", Integer.toString(port), "--threads", "3", "--pages", "12",
                "--expect-min-bytes", Integer.toString(PAGE));
        assertEquals("0", r[0], r[2]);
        assertTrue(r[1].contains("\"pages\":36,"), r[1]);
        assertTrue(r[1].contains("\"connections\":36,"), r[1]);
        assertTrue(r[1].contains("\"errors\":0,") && r[1].contains("\"stopped_by\":\"done\""));
        r = load("--port", Integer.toString(port), "--threads", "2", "--pages", "10", "--keepalive");
        assertEquals("0", r[0], r[2]);
        assertTrue(r[1].contains("\"pages\":20,") && r[1].contains("\"connections\":2,"), r[1]);
    }

    @Test
    void loadGeneratorStopsAtItsTimeBound() {
        long t0 = System.nanoTime();
        String[] r = load("--port", Integer.toString(port), "--threads", "2", "--pages", "10000000",
                "--max-seconds", "1");
        double s = (System.nanoTime() - t0) / 1e9;
        assertEquals("1", r[0]);
        assertTrue(r[1].contains("\"stopped_by\":\"max-seconds\""), r[1]);
        assertTrue(s < 30, "took " + s + " s");
        assertTrue(r[2].contains("--max-seconds 1 reached"));
    }

    @Test
    void aServerThatIsDownIsOneClearError() throws IOException {
        int free;
        try (ServerSocket s = new ServerSocket(0)) {
            free = s.getLocalPort();
        }
        long t0 = System.nanoTime();
        String[] r = load("--port", Integer.toString(free), "--threads", "4", "--pages", "4");
        assertEquals("1", r[0]);
        assertTrue(r[2].startsWith("error: cannot connect to 127.0.0.1:" + free), r[2]);
        assertEquals(1, r[2].strip().lines().count());
        assertTrue((System.nanoTime() - t0) / 1e9 < 10);
        assertEquals("2", load("--threads", "1")[0]);
    }

    @Test
    void sessionVisitsValidPages() {
        for (int client = 0; client < 3; client++) {
            List<String> s = ShopLoad.session(client, 5);
            assertEquals(9, s.size());
            assertFalse(s.get(3).endsWith("null"));
        }
    }
}
