package org.jvmos.workloads.shop;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;
import org.h2.jdbcx.JdbcConnectionPool;

/**
 * The embedded database: an in-memory H2 database, created and seeded with a JPetStore-like
 * catalog (5 categories, 16 products, 28 items) and one account. Each instance has its own
 * database, so tests and servers never share state.
 */
final class Database implements AutoCloseable {

    static final String USER = "j2ee";
    static final String PASSWORD = "j2ee";
    private static final AtomicInteger INSTANCES = new AtomicInteger();

    private final JdbcConnectionPool pool;

    Database() throws SQLException {
        String url = "jdbc:h2:mem:shop" + INSTANCES.incrementAndGet() + ";DB_CLOSE_DELAY=-1";
        pool = JdbcConnectionPool.create(url, "sa", "");
        pool.setMaxConnections(64);
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            for (String ddl : SCHEMA) {
                s.execute(ddl);
            }
            seed(c);
        }
    }

    Connection connection() throws SQLException {
        return pool.getConnection();
    }

    @Override
    public void close() {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("SHUTDOWN");
        } catch (SQLException e) {
            // the database is going away anyway
        }
        pool.dispose();
    }

    private static final String[] SCHEMA = {
        "CREATE TABLE category (catid VARCHAR(10) PRIMARY KEY, name VARCHAR(80), descn VARCHAR(255))",
        "CREATE TABLE product (productid VARCHAR(10) PRIMARY KEY, category VARCHAR(10) NOT NULL "
            + "REFERENCES category(catid), name VARCHAR(80), descn VARCHAR(255))",
        "CREATE TABLE item (itemid VARCHAR(10) PRIMARY KEY, productid VARCHAR(10) NOT NULL "
            + "REFERENCES product(productid), listprice DECIMAL(10,2), attr1 VARCHAR(80))",
        "CREATE TABLE inventory (itemid VARCHAR(10) PRIMARY KEY REFERENCES item(itemid), qty INT NOT NULL)",
        "CREATE TABLE account (userid VARCHAR(80) PRIMARY KEY, password VARCHAR(25) NOT NULL, "
            + "firstname VARCHAR(80), lastname VARCHAR(80), email VARCHAR(80))",
        "CREATE TABLE orders (orderid BIGINT AUTO_INCREMENT PRIMARY KEY, userid VARCHAR(80) NOT NULL "
            + "REFERENCES account(userid), orderdate TIMESTAMP, totalprice DECIMAL(10,2))",
        "CREATE TABLE lineitem (orderid BIGINT NOT NULL REFERENCES orders(orderid), linenum INT NOT NULL, "
            + "itemid VARCHAR(10) NOT NULL REFERENCES item(itemid), quantity INT NOT NULL, "
            + "unitprice DECIMAL(10,2), PRIMARY KEY (orderid, linenum))",
    };

    // id, name, description
    static final String[][] CATEGORIES = {
        {"FISH", "Fish", "Salt and fresh water fish"},
        {"DOGS", "Dogs", "Working, sporting and toy dogs"},
        {"REPTILES", "Reptiles", "Lizards, snakes and turtles"},
        {"CATS", "Cats", "Short and long haired cats"},
        {"BIRDS", "Birds", "Parrots, finches and songbirds"},
    };

    // id, category, name, description
    static final String[][] PRODUCTS = {
        {"FI-SW-01", "FISH", "Angelfish", "Salt water fish from the Indian Ocean"},
        {"FI-SW-02", "FISH", "Tiger Shark", "Salt water fish for large tanks"},
        {"FI-FW-01", "FISH", "Koi", "Fresh water fish for garden ponds"},
        {"FI-FW-02", "FISH", "Goldfish", "Fresh water fish, easy to keep"},
        {"K9-BD-01", "DOGS", "Bulldog", "Friendly dog from England"},
        {"K9-PO-02", "DOGS", "Poodle", "Cute dog from France"},
        {"K9-DL-01", "DOGS", "Dalmation", "Great dog for a fire station"},
        {"K9-RT-01", "DOGS", "Golden Retriever", "Great family dog"},
        {"K9-RT-02", "DOGS", "Labrador Retriever", "Great hunting dog"},
        {"K9-CW-01", "DOGS", "Chihuahua", "Great companion dog"},
        {"RP-SN-01", "REPTILES", "Rattlesnake", "Doubles as a watch dog"},
        {"RP-LI-02", "REPTILES", "Iguana", "Friendly green friend"},
        {"FL-DSH-01", "CATS", "Manx", "Great for reducing mouse populations"},
        {"FL-DLH-02", "CATS", "Persian", "Friendly house cat, doubles as a princess"},
        {"AV-CB-01", "BIRDS", "Amazon Parrot", "Great companion for up to 75 years"},
        {"AV-SB-02", "BIRDS", "Finch", "Great stress reliever"},
    };

    // id, product, price, attribute: 28 items, one or two per product
    static final String[][] ITEMS = {
        {"EST-1", "FI-SW-01", "16.50", "Large"}, {"EST-2", "FI-SW-01", "16.50", "Small"},
        {"EST-3", "FI-SW-02", "18.50", "Toothless"}, {"EST-4", "FI-FW-01", "18.50", "Spotted"},
        {"EST-5", "FI-FW-01", "18.50", "Spotless"}, {"EST-6", "K9-BD-01", "18.50", "Male Adult"},
        {"EST-7", "K9-BD-01", "18.50", "Female Puppy"}, {"EST-8", "K9-PO-02", "18.50", "Male Puppy"},
        {"EST-9", "K9-DL-01", "18.50", "Spotless Male Puppy"},
        {"EST-10", "K9-DL-01", "18.50", "Spotted Adult Female"},
        {"EST-11", "RP-SN-01", "18.50", "Venomless"}, {"EST-12", "RP-SN-01", "18.50", "Rattleless"},
        {"EST-13", "RP-LI-02", "18.50", "Green Adult"}, {"EST-14", "FL-DSH-01", "58.50", "Tailless"},
        {"EST-15", "FL-DSH-01", "23.50", "With tail"}, {"EST-16", "FL-DLH-02", "93.50", "Adult Female"},
        {"EST-17", "FL-DLH-02", "93.50", "Adult Male"}, {"EST-18", "AV-CB-01", "193.50", "Adult Male"},
        {"EST-19", "AV-SB-02", "15.50", "Adult Male"}, {"EST-20", "FI-FW-02", "5.50", "Adult Male"},
        {"EST-21", "FI-FW-02", "5.29", "Adult Female"},
        {"EST-22", "K9-RT-02", "135.50", "Adult Male"},
        {"EST-23", "K9-RT-02", "145.49", "Adult Female"},
        {"EST-24", "K9-RT-02", "255.50", "Adult Male"},
        {"EST-25", "K9-RT-02", "325.29", "Adult Female"},
        {"EST-26", "K9-CW-01", "125.50", "Adult Male"},
        {"EST-27", "K9-CW-01", "155.29", "Adult Female"},
        {"EST-28", "K9-RT-01", "155.29", "Adult Female"},
    };

    static final int INITIAL_INVENTORY = 1_000_000;

    private static void seed(Connection c) throws SQLException {
        try (PreparedStatement p = c.prepareStatement("INSERT INTO category VALUES (?, ?, ?)")) {
            for (String[] r : CATEGORIES) {
                p.setString(1, r[0]);
                p.setString(2, r[1]);
                p.setString(3, r[2]);
                p.executeUpdate();
            }
        }
        try (PreparedStatement p = c.prepareStatement("INSERT INTO product VALUES (?, ?, ?, ?)")) {
            for (String[] r : PRODUCTS) {
                for (int i = 0; i < 4; i++) {
                    p.setString(i + 1, r[i]);
                }
                p.executeUpdate();
            }
        }
        try (PreparedStatement p = c.prepareStatement("INSERT INTO item VALUES (?, ?, ?, ?)");
             PreparedStatement q = c.prepareStatement("INSERT INTO inventory VALUES (?, ?)")) {
            for (String[] r : ITEMS) {
                p.setString(1, r[0]);
                p.setString(2, r[1]);
                p.setBigDecimal(3, new BigDecimal(r[2]));
                p.setString(4, r[3]);
                p.executeUpdate();
                q.setString(1, r[0]);
                q.setInt(2, INITIAL_INVENTORY);
                q.executeUpdate();
            }
        }
        try (PreparedStatement p = c.prepareStatement("INSERT INTO account VALUES (?, ?, ?, ?, ?)")) {
            p.setString(1, USER);
            p.setString(2, PASSWORD);
            p.setString(3, "ABC");
            p.setString(4, "XYX");
            p.setString(5, "j2ee@example.org");
            p.executeUpdate();
        }
    }
}
