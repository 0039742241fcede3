package org.jvmos.workloads.shop;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;
import java.io.IOException;
import java.math.BigDecimal;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The shop's pages, rendered dynamically for each request (no JSP): catalog, category,
 * product, item, cart (in the HTTP session), sign-on/off, new order and the order list.
 * Every answer is a complete page with Content-Length, padded to the configured size.
 */
final class ShopServlet extends HttpServlet {

    private static final long serialVersionUID = 1L;
    private static final String CART = "cart";
    private static final String ACCOUNT = "account";

    private final transient Store store;
    private final int pageBytes;
    private final long maxRequests;
    private final AtomicLong served = new AtomicLong();
    private final AtomicLong bytes = new AtomicLong();
    private final transient Runnable onLimit;

    ShopServlet(Store store, int pageBytes, long maxRequests, Runnable onLimit) {
        this.store = store;
        this.pageBytes = pageBytes;
        this.maxRequests = maxRequests;
        this.onLimit = onLimit;
    }

    long served() {
        return served.get();
    }

    long bytes() {
        return bytes.get();
    }

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String path = req.getRequestURI();
        if (path.equals("/health")) {
            send(resp, 200, "text/plain", "ok\n".getBytes());
            return;
        }
        long n = served.incrementAndGet();
        if (maxRequests > 0 && n > maxRequests) {
            send(resp, 503, "text/plain", "request limit reached\n".getBytes());
            return;
        }
        Page page;
        int status = 200;
        try {
            page = switch (path) {
                case "/", "/catalog" -> catalog();
                case "/category" -> category(req.getParameter("id"));
                case "/product" -> product(req.getParameter("id"));
                case "/item" -> item(req.getParameter("id"));
                case "/cart" -> cart(req);
                case "/signon" -> signOn(req);
                case "/signoff" -> signOff(req);
                case "/order/new" -> newOrder(req);
                case "/orders" -> orders(req);
                default -> null;
            };
            if (page == null) {
                status = 404;
                page = new Page("Not found").text("h2", "No such page: " + path);
            }
        } catch (NotFound e) {
            status = 404;
            page = new Page("Not found").text("h2", e.getMessage());
        } catch (SQLException e) {
            status = 409;
            page = new Page("Order failed").text("h2", e.getMessage());
        }
        byte[] body = page.render(pageBytes);
        send(resp, status, "text/html; charset=utf-8", body);
        bytes.addAndGet(body.length);
        if (maxRequests > 0 && n == maxRequests) {
            onLimit.run();
        }
    }

    private static void send(HttpServletResponse resp, int status, String type, byte[] body)
            throws IOException {
        resp.setStatus(status);
        resp.setContentType(type);
        resp.setContentLength(body.length);
        resp.getOutputStream().write(body);
    }

    private static final class NotFound extends Exception {
        private static final long serialVersionUID = 1L;

        NotFound(String what) {
            super(what);
        }
    }

    private Page catalog() {
        Page p = new Page("Catalog").text("h2", "Welcome to JPetStore");
        p.add("<ul id=\"categories\">");
        for (Catalog.Category c : store.categories()) {
            p.add("<li><a href=\"/category?id=" + c.id() + "\">" + Page.escape(c.name()) + "</a> - "
                    + Page.escape(c.description()) + "</li>");
        }
        return p.add("</ul>");
    }

    private Page category(String id) throws NotFound {
        Catalog.Category c = store.category(nonNull(id)).orElseThrow(() -> new NotFound("no category " + id));
        Page p = new Page(c.name()).text("h2", c.name());
        p.add("<table id=\"products\"><tr><th>Product ID</th><th>Name</th></tr>");
        for (Catalog.Product pr : store.productsOf(c.id())) {
            p.add("<tr><td><a href=\"/product?id=" + pr.id() + "\">" + pr.id() + "</a></td><td>"
                    + Page.escape(pr.name()) + "</td></tr>");
        }
        return p.add("</table>");
    }

    private Page product(String id) throws NotFound {
        Catalog.Product pr = store.product(nonNull(id)).orElseThrow(() -> new NotFound("no product " + id));
        Page p = new Page(pr.name()).text("h2", pr.name()).text("p", pr.description());
        p.add("<table id=\"items\"><tr><th>Item ID</th><th>Description</th><th>Price</th></tr>");
        for (Catalog.Item it : store.itemsOf(pr.id())) {
            p.add("<tr><td><a href=\"/item?id=" + it.id() + "\">" + it.id() + "</a></td><td>"
                    + Page.escape(it.attribute() + " " + pr.name()) + "</td><td>$" + it.listPrice()
                    + "</td><td><a href=\"/cart?add=" + it.id() + "\">Add to Cart</a></td></tr>");
        }
        return p.add("</table>");
    }

    private Page item(String id) throws NotFound {
        Catalog.Item it = store.item(nonNull(id)).orElseThrow(() -> new NotFound("no item " + id));
        Catalog.Product pr = store.product(it.productId()).orElseThrow(() -> new NotFound("no product"));
        return new Page(pr.name())
                .text("h2", it.attribute() + " " + pr.name())
                .add("<p class=\"price\">$" + it.listPrice() + "</p>")
                .add("<p class=\"stock\">" + (it.inventory() > 0 ? "in stock" : "back-ordered") + "</p>")
                .add("<a href=\"/cart?add=" + it.id() + "\">Add to Cart</a>");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Integer> cartOf(HttpSession s) {
        Object c = s.getAttribute(CART);
        if (c == null) {
            c = new LinkedHashMap<String, Integer>();
            s.setAttribute(CART, c);
        }
        return (Map<String, Integer>) c;
    }

    private Page cart(HttpServletRequest req) throws NotFound {
        HttpSession s = req.getSession(true);
        Map<String, Integer> cart = cartOf(s);
        String add = req.getParameter("add");
        String remove = req.getParameter("remove");
        synchronized (cart) {
            if (add != null) {
                store.item(add).orElseThrow(() -> new NotFound("no item " + add));
                cart.merge(add, 1, Integer::sum);
            }
            if (remove != null) {
                cart.remove(remove);
            }
            String qty = req.getParameter("qty");
            String of = req.getParameter("item");
            if (qty != null && of != null && cart.containsKey(of)) {
                int q = parseQty(qty);
                if (q <= 0) {
                    cart.remove(of);
                } else {
                    cart.put(of, q);
                }
            }
            Page p = new Page("Shopping Cart").text("h2", "Shopping Cart");
            p.add("<table id=\"cart\"><tr><th>Item ID</th><th>Quantity</th><th>Total</th></tr>");
            BigDecimal total = BigDecimal.ZERO;
            for (Map.Entry<String, Integer> e : cart.entrySet()) {
                Catalog.Item it = store.item(e.getKey()).orElseThrow(() -> new NotFound("item gone"));
                BigDecimal line = it.listPrice().multiply(BigDecimal.valueOf(e.getValue()));
                total = total.add(line);
                p.add("<tr><td>" + it.id() + "</td><td>" + e.getValue() + "</td><td>$" + line
                        + "</td></tr>");
            }
            p.add("</table>");
            return p.add("<p id=\"subtotal\">Sub Total: $" + total + "</p>");
        }
    }

    private static int parseQty(String s) {
        try {
            return Math.min(Integer.parseInt(s), 1000);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private Page signOn(HttpServletRequest req) {
        String user = req.getParameter("username");
        String pass = req.getParameter("password");
        Optional<Catalog.Account> a = user == null || pass == null ? Optional.empty()
                : store.signOn(user, pass);
        if (a.isEmpty()) {
            return new Page("Sign On").text("h2", "Invalid username or password.");
        }
        req.getSession(true).setAttribute(ACCOUNT, a.get().username());
        return new Page("Welcome").text("h2", "Welcome " + a.get().firstName() + "!");
    }

    private Page signOff(HttpServletRequest req) {
        HttpSession s = req.getSession(false);
        if (s != null) {
            s.invalidate();
        }
        return new Page("Signed off").text("h2", "You are signed off.");
    }

    private Page newOrder(HttpServletRequest req) throws NotFound, SQLException {
        HttpSession s = req.getSession(true);
        Object user = s.getAttribute(ACCOUNT);
        if (user == null) {
            return new Page("Sign On").text("h2", "Please sign on before you order.");
        }
        Map<String, Integer> cart = cartOf(s);
        List<Catalog.LineItem> lines = new ArrayList<>();
        synchronized (cart) {
            for (Map.Entry<String, Integer> e : cart.entrySet()) {
                Catalog.Item it = store.item(e.getKey()).orElseThrow(() -> new NotFound("item gone"));
                lines.add(new Catalog.LineItem(it.id(), e.getValue(), it.listPrice()));
            }
            if (lines.isEmpty()) {
                return new Page("Order").text("h2", "Your cart is empty.");
            }
            Catalog.Order o = store.placeOrder((String) user, lines);
            cart.clear();
            return new Page("Order " + o.id()).text("h2", "Thank you, your order has been submitted.")
                    .add("<p id=\"order\">Order #" + o.id() + ": " + o.lines() + " lines, total $"
                            + o.total() + "</p>");
        }
    }

    private Page orders(HttpServletRequest req) {
        HttpSession s = req.getSession(false);
        Object user = s == null ? null : s.getAttribute(ACCOUNT);
        if (user == null) {
            return new Page("Sign On").text("h2", "Please sign on to see your orders.");
        }
        Page p = new Page("My Orders").text("h2", "My Orders");
        p.add("<table id=\"orders\"><tr><th>Order ID</th><th>Lines</th><th>Total</th></tr>");
        for (Catalog.Order o : store.ordersOf((String) user)) {
            p.add("<tr><td>" + o.id() + "</td><td>" + o.lines() + "</td><td>$" + o.total() + "</td></tr>");
        }
        return p.add("</table>");
    }

    private static String nonNull(String id) throws NotFound {
        if (id == null || id.isEmpty()) {
            throw new NotFound("missing id");
        }
        return id;
    }
}
