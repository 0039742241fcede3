package org.jvmos.workloads.shop;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The object-persistence layer in front of the database, as in JPetStore: rows become objects,
 * and the catalog (which does not change while the shop runs) is read once per key and then
 * served from a cache, so repeated catalog pages cost no query. Orders and inventory always go
 * to the database, in a transaction.
 */
final class Store {

    private final Database db;
    private final AtomicLong queries = new AtomicLong();
    private final Map<String, List<Catalog.Category>> categoryLists = new ConcurrentHashMap<>();
    private final Map<String, Optional<Catalog.Category>> categories = new ConcurrentHashMap<>();
    private final Map<String, List<Catalog.Product>> productsByCategory = new ConcurrentHashMap<>();
    private final Map<String, Optional<Catalog.Product>> products = new ConcurrentHashMap<>();
    private final Map<String, List<Catalog.Item>> itemsByProduct = new ConcurrentHashMap<>();
    private final Map<String, Optional<Catalog.Item>> items = new ConcurrentHashMap<>();

    Store(Database db) {
        this.db = db;
    }

    /** Database queries made so far (cache misses and writes). */
    long queries() {
        return queries.get();
    }

    List<Catalog.Category> categories() {
        return categoryLists.computeIfAbsent("all", k -> query(
                "SELECT catid, name, descn FROM category ORDER BY catid", List.of(),
                r -> new Catalog.Category(r.getString(1), r.getString(2), r.getString(3))));
    }

    Optional<Catalog.Category> category(String id) {
        return categories.computeIfAbsent(id, k -> query(
                "SELECT catid, name, descn FROM category WHERE catid = ?", List.of(id),
                r -> new Catalog.Category(r.getString(1), r.getString(2), r.getString(3)))
                .stream().findFirst());
    }

    List<Catalog.Product> productsOf(String categoryId) {
        return productsByCategory.computeIfAbsent(categoryId, k -> query(
                "SELECT productid, category, name, descn FROM product WHERE category = ? "
                        + "ORDER BY productid", List.of(categoryId), Store::product));
    }

    Optional<Catalog.Product> product(String id) {
        return products.computeIfAbsent(id, k -> query(
                "SELECT productid, category, name, descn FROM product WHERE productid = ?",
                List.of(id), Store::product).stream().findFirst());
    }

    List<Catalog.Item> itemsOf(String productId) {
        return itemsByProduct.computeIfAbsent(productId, k -> query(
                "SELECT i.itemid, i.productid, i.listprice, i.attr1, v.qty FROM item i "
                        + "JOIN inventory v ON v.itemid = i.itemid WHERE i.productid = ? "
                        + "ORDER BY i.itemid", List.of(productId), Store::item));
    }

    /** Item with its price from the cache; the inventory shown is as of the first read. */
    Optional<Catalog.Item> item(String id) {
        return items.computeIfAbsent(id, k -> query(
                "SELECT i.itemid, i.productid, i.listprice, i.attr1, v.qty FROM item i "
                        + "JOIN inventory v ON v.itemid = i.itemid WHERE i.itemid = ?",
                List.of(id), Store::item).stream().findFirst());
    }

    Optional<Catalog.Account> signOn(String username, String password) {
        return query("SELECT userid, password, firstname, lastname, email FROM account "
                        + "WHERE userid = ? AND password = ?", List.of(username, password),
                r -> new Catalog.Account(r.getString(1), r.getString(2), r.getString(3),
                        r.getString(4), r.getString(5))).stream().findFirst();
    }

    /** Inserts the order and its lines and takes the quantities out of the inventory. */
    Catalog.Order placeOrder(String username, List<Catalog.LineItem> lines) throws SQLException {
        if (lines.isEmpty()) {
            throw new SQLException("an order needs at least one line");
        }
        BigDecimal total = BigDecimal.ZERO;
        for (Catalog.LineItem l : lines) {
            total = total.add(l.unitPrice().multiply(BigDecimal.valueOf(l.quantity())));
        }
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            try {
                long id;
                try (PreparedStatement p = c.prepareStatement(
                        "INSERT INTO orders (userid, orderdate, totalprice) VALUES (?, ?, ?)",
                        Statement.RETURN_GENERATED_KEYS)) {
                    p.setString(1, username);
                    p.setTimestamp(2, new Timestamp(System.currentTimeMillis()));
                    p.setBigDecimal(3, total);
                    p.executeUpdate();
                    try (ResultSet k = p.getGeneratedKeys()) {
                        k.next();
                        id = k.getLong(1);
                    }
                }
                try (PreparedStatement p = c.prepareStatement(
                        "INSERT INTO lineitem VALUES (?, ?, ?, ?, ?)");
                     PreparedStatement inv = c.prepareStatement(
                             "UPDATE inventory SET qty = qty - ? WHERE itemid = ? AND qty >= ?")) {
                    int n = 0;
                    for (Catalog.LineItem l : lines) {
                        p.setLong(1, id);
                        p.setInt(2, ++n);
                        p.setString(3, l.itemId());
                        p.setInt(4, l.quantity());
                        p.setBigDecimal(5, l.unitPrice());
                        p.executeUpdate();
                        inv.setInt(1, l.quantity());
                        inv.setString(2, l.itemId());
                        inv.setInt(3, l.quantity());
                        if (inv.executeUpdate() != 1) {
                            throw new SQLException("out of stock: " + l.itemId());
                        }
                    }
                }
                c.commit();
                queries.addAndGet(1 + 2L * lines.size());
                return new Catalog.Order(id, username, total, lines.size());
            } catch (SQLException e) {
                c.rollback();
                throw e;
            }
        }
    }

    List<Catalog.Order> ordersOf(String username) {
        return query("SELECT o.orderid, o.userid, o.totalprice, COUNT(l.linenum) FROM orders o "
                        + "LEFT JOIN lineitem l ON l.orderid = o.orderid WHERE o.userid = ? "
                        + "GROUP BY o.orderid, o.userid, o.totalprice ORDER BY o.orderid DESC "
                        + "LIMIT 20", List.of(username),
                r -> new Catalog.Order(r.getLong(1), r.getString(2), r.getBigDecimal(3), r.getInt(4)));
    }

    int inventory(String itemId) {
        List<Integer> q = query("SELECT qty FROM inventory WHERE itemid = ?", List.of(itemId),
                r -> r.getInt(1));
        return q.isEmpty() ? -1 : q.get(0);
    }

    private interface RowMapper<T> {
        T map(ResultSet r) throws SQLException;
    }

    private <T> List<T> query(String sql, List<String> params, RowMapper<T> mapper) {
        queries.incrementAndGet();
        try (Connection c = db.connection(); PreparedStatement p = c.prepareStatement(sql)) {
            for (int i = 0; i < params.size(); i++) {
                p.setString(i + 1, params.get(i));
            }
            List<T> out = new ArrayList<>();
            try (ResultSet r = p.executeQuery()) {
                while (r.next()) {
                    out.add(mapper.map(r));
                }
            }
            return Collections.unmodifiableList(out);
        } catch (SQLException e) {
            throw new IllegalStateException("query failed: " + sql + ": " + e.getMessage(), e);
        }
    }

    private static Catalog.Product product(ResultSet r) throws SQLException {
        return new Catalog.Product(r.getString(1), r.getString(2), r.getString(3), r.getString(4));
    }

    private static Catalog.Item item(ResultSet r) throws SQLException {
        return new Catalog.Item(r.getString(1), r.getString(2), r.getBigDecimal(3), r.getString(4),
                r.getInt(5));
    }
}
