package org.jvmos.workloads.dacapo;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * TPC-B-like banking on an in-memory H2 database: T client threads run a seeded mix of
 * deposits (account, teller, branch and history updated together), transfers between accounts,
 * branch statements and history look-ups, each its own transaction.
 * <p>
 * The mix never reads a balance to decide what to write, so the final balances do not depend on how
 * the threads interleave: validate compares every row with balances replayed in Java.
 */
final class H2Benchmark implements Benchmark {
    private static final AtomicInteger DATABASES = new AtomicInteger();
    private static final long INITIAL_BALANCE = 100_000;
    private static final int TELLERS_PER_BRANCH = 10;
    private static final long SEED = 0x4832_0001L;

    private String url;
    private Connection keepAlive;
    private int threads;
    private int branches;
    private int accountsPerBranch;
    private int transactions;
    private int iteration;

    // What the database must hold, replayed from the same seeded operations the clients ran.
    private long[] expectedAccount;
    private long[] expectedTeller;
    private long[] expectedBranch;
    private long iterationHistoryRows;
    private long iterationDeposits;

    @Override
    public String name() {
        return "h2";
    }

    /** The database's JDBC URL, so that a test can reach in and corrupt it. */
    String url() {
        return url;
    }

    @Override
    public void setup(Size size, Path workDir, int threads) throws Exception {
        this.threads = threads;
        branches = size.pick(4, 10, 40);
        accountsPerBranch = size.pick(500, 2_000, 5_000);
        transactions = size.pick(6_000, 50_000, 250_000);
        // DB_CLOSE_DELAY keeps the database while client connections come and go between iterations.
        url = "jdbc:h2:mem:jvmos-dacapo-" + DATABASES.incrementAndGet() + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000";
        keepAlive = DriverManager.getConnection(url);
        createSchema();
        load();
    }

    private void createSchema() throws SQLException {
        try (Statement s = keepAlive.createStatement()) {
            s.execute("CREATE TABLE branch (id INT PRIMARY KEY, balance BIGINT NOT NULL, filler VARCHAR(88))");
            s.execute("CREATE TABLE teller (id INT PRIMARY KEY, branch_id INT NOT NULL REFERENCES branch(id),"
                    + " balance BIGINT NOT NULL, filler VARCHAR(84))");
            s.execute("CREATE TABLE account (id INT PRIMARY KEY, branch_id INT NOT NULL REFERENCES branch(id),"
                    + " balance BIGINT NOT NULL, filler VARCHAR(84))");
            s.execute("CREATE INDEX account_branch ON account(branch_id)");
            s.execute("CREATE TABLE history (id BIGINT AUTO_INCREMENT PRIMARY KEY, account_id INT NOT NULL,"
                    + " other_id INT, teller_id INT, branch_id INT, delta BIGINT NOT NULL, kind CHAR(1) NOT NULL,"
                    + " at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, filler VARCHAR(22))");
            s.execute("CREATE INDEX history_account ON history(account_id)");
        }
    }

    private void load() throws SQLException {
        int accounts = branches * accountsPerBranch;
        expectedBranch = new long[branches];
        expectedTeller = new long[branches * TELLERS_PER_BRANCH];
        expectedAccount = new long[accounts];
        Arrays.fill(expectedAccount, INITIAL_BALANCE);
        keepAlive.setAutoCommit(false);
        insertRows("branch", branches, 0, 0);
        insertRows("teller", expectedTeller.length, TELLERS_PER_BRANCH, 0);
        insertRows("account", accounts, accountsPerBranch, INITIAL_BALANCE);
        keepAlive.commit();
        keepAlive.setAutoCommit(true);
    }

    /** Rows 0..rows-1 of table; perBranch 0 means the table has no branch_id column. */
    private void insertRows(String table, int rows, int perBranch, long balance) throws SQLException {
        boolean hasBranch = perBranch > 0;
        String sql = "INSERT INTO " + table + " VALUES (?, " + (hasBranch ? "?, " : "") + "?, ?)";
        try (PreparedStatement ps = keepAlive.prepareStatement(sql)) {
            for (int id = 0; id < rows; id++) {
                int col = 1;
                ps.setInt(col++, id);
                if (hasBranch) {
                    ps.setInt(col++, id / perBranch);
                }
                ps.setLong(col++, balance);
                ps.setString(col, "row " + id);
                ps.addBatch();
                if (id % 1000 == 999) {
                    ps.executeBatch();
                }
            }
            ps.executeBatch();
        }
    }

    @Override
    public void prepareIteration() throws SQLException {
        // As DaCapo resets its database, keep iterations comparable: history would otherwise only grow.
        try (Statement s = keepAlive.createStatement()) {
            s.execute("TRUNCATE TABLE history");
        }
        iterationHistoryRows = 0;
        iterationDeposits = 0;
    }

    @Override
    public void iterate() throws Exception {
        int it = iteration++;
        Workers.run(name(), threads, (worker, count) -> {
            int share = transactions / count + (worker < transactions % count ? 1 : 0);
            try (Client client = new Client(new Random(SEED + 1_000_003L * it + worker))) {
                client.run(share);
                merge(client);
            }
        });
    }

    private synchronized void merge(Client c) {
        add(expectedAccount, c.accountDelta);
        add(expectedTeller, c.tellerDelta);
        add(expectedBranch, c.branchDelta);
        iterationHistoryRows += c.historyRows;
        iterationDeposits += c.deposits;
    }

    private static void add(long[] into, long[] delta) {
        for (int i = 0; i < into.length; i++) {
            into[i] += delta[i];
        }
    }

    @Override
    public void validate() throws Exception {
        compareBalances("account", expectedAccount);
        compareBalances("teller", expectedTeller);
        compareBalances("branch", expectedBranch);
        try (Statement s = keepAlive.createStatement()) {
            Check.equal("h2 history rows", iterationHistoryRows, single(s, "SELECT COUNT(*) FROM history"));
            Check.equal("h2 sum of this iteration's deposits in history", iterationDeposits,
                    single(s, "SELECT COALESCE(SUM(delta), 0) FROM history WHERE kind = 'D'"));
            Check.equal("h2 transfers in history sum to zero", 0,
                    single(s, "SELECT COALESCE(SUM(delta), 0) FROM history WHERE kind = 'T'"));
            // Every deposit moves the same amount through an account, a teller and a branch.
            long branchTotal = single(s, "SELECT SUM(balance) FROM branch");
            Check.equal("h2 tellers' total equals branches' total", branchTotal,
                    single(s, "SELECT SUM(balance) FROM teller"));
            Check.equal("h2 money conserved (accounts = initial + deposits)",
                    INITIAL_BALANCE * expectedAccount.length + branchTotal,
                    single(s, "SELECT SUM(balance) FROM account"));
        }
    }

    private void compareBalances(String table, long[] expected) throws SQLException, ValidationException {
        try (Statement s = keepAlive.createStatement();
             ResultSet rs = s.executeQuery("SELECT id, balance FROM " + table + " ORDER BY id")) {
            int rows = 0;
            while (rs.next()) {
                int id = rs.getInt(1);
                Check.equal("h2 " + table + " id at row " + rows, rows, id);
                Check.equal("h2 " + table + " " + id + " balance", expected[id], rs.getLong(2));
                rows++;
            }
            Check.equal("h2 " + table + " rows", expected.length, rows);
        }
    }

    private static long single(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Override
    public void teardown() throws SQLException {
        if (keepAlive != null) {
            try (Statement s = keepAlive.createStatement()) {
                s.execute("SHUTDOWN");
            }
            keepAlive.close();
        }
    }

    /** One client thread: its own connection, prepared statements and record of what it changed. */
    private final class Client implements AutoCloseable {
        private final Random random;
        private final Connection conn;
        private final PreparedStatement addAccount;
        private final PreparedStatement readAccount;
        private final PreparedStatement addTeller;
        private final PreparedStatement addBranch;
        private final PreparedStatement addHistory;
        private final PreparedStatement branchTop;
        private final PreparedStatement branchSum;
        private final PreparedStatement accountHistory;
        final long[] accountDelta = new long[expectedAccount.length];
        final long[] tellerDelta = new long[expectedTeller.length];
        final long[] branchDelta = new long[expectedBranch.length];
        long historyRows;
        long deposits;

        Client(Random random) throws SQLException {
            this.random = random;
            conn = DriverManager.getConnection(url);
            conn.setAutoCommit(false);
            addAccount = conn.prepareStatement("UPDATE account SET balance = balance + ? WHERE id = ?");
            readAccount = conn.prepareStatement("SELECT balance FROM account WHERE id = ?");
            addTeller = conn.prepareStatement("UPDATE teller SET balance = balance + ? WHERE id = ?");
            addBranch = conn.prepareStatement("UPDATE branch SET balance = balance + ? WHERE id = ?");
            addHistory = conn.prepareStatement("INSERT INTO history (account_id, other_id, teller_id, branch_id,"
                    + " delta, kind, filler) VALUES (?, ?, ?, ?, ?, ?, ?)");
            branchTop = conn.prepareStatement("SELECT id, balance FROM account WHERE branch_id = ?"
                    + " ORDER BY balance DESC, id LIMIT 10");
            branchSum = conn.prepareStatement("SELECT COUNT(*), SUM(balance) FROM account WHERE branch_id = ?");
            accountHistory = conn.prepareStatement("SELECT COUNT(*), COALESCE(SUM(delta), 0) FROM history"
                    + " WHERE account_id = ?");
        }

        void run(int count) throws SQLException, ValidationException {
            for (int i = 0; i < count; i++) {
                int kind = random.nextInt(100);
                if (kind < 45) {
                    deposit();
                } else if (kind < 85) {
                    transfer();
                } else if (kind < 95) {
                    statement();
                } else {
                    history();
                }
                conn.commit();
            }
        }

        /** TPC-B's transaction; 85% of accounts are local to the teller's branch, as in the spec. */
        private void deposit() throws SQLException, ValidationException {
            int branch = random.nextInt(branches);
            int teller = branch * TELLERS_PER_BRANCH + random.nextInt(TELLERS_PER_BRANCH);
            int accountBranch = random.nextInt(100) < 85 ? branch : random.nextInt(branches);
            int account = accountBranch * accountsPerBranch + random.nextInt(accountsPerBranch);
            long delta = random.nextInt(10_001) - 5_000;
            // Lock order is always accounts, then tellers, then branches: no deadlock between clients.
            update(addAccount, delta, account);
            readAccount.setInt(1, account);
            try (ResultSet rs = readAccount.executeQuery()) {
                Check.isTrue(rs.next(), "h2 account " + account + " vanished");
            }
            update(addTeller, delta, teller);
            update(addBranch, delta, branch);
            history(account, null, teller, branch, delta, "D");
            accountDelta[account] += delta;
            tellerDelta[teller] += delta;
            branchDelta[branch] += delta;
            deposits += delta;
        }

        private void transfer() throws SQLException, ValidationException {
            int accounts = accountDelta.length;
            int from = random.nextInt(accounts);
            int to = (from + 1 + random.nextInt(accounts - 1)) % accounts;
            long amount = 1 + random.nextInt(2_000);
            if (from < to) {
                update(addAccount, -amount, from);
                update(addAccount, amount, to);
            } else {
                update(addAccount, amount, to);
                update(addAccount, -amount, from);
            }
            history(from, to, null, null, -amount, "T");
            history(to, from, null, null, amount, "T");
            accountDelta[from] -= amount;
            accountDelta[to] += amount;
        }

        private void statement() throws SQLException, ValidationException {
            int branch = random.nextInt(branches);
            branchTop.setInt(1, branch);
            int rows = 0;
            try (ResultSet rs = branchTop.executeQuery()) {
                while (rs.next()) {
                    rows++;
                }
            }
            Check.equal("h2 statement rows of branch " + branch, Math.min(10, accountsPerBranch), rows);
            branchSum.setInt(1, branch);
            try (ResultSet rs = branchSum.executeQuery()) {
                rs.next();
                Check.equal("h2 accounts in branch " + branch, accountsPerBranch, rs.getLong(1));
            }
        }

        private void history() throws SQLException {
            accountHistory.setInt(1, random.nextInt(accountDelta.length));
            try (ResultSet rs = accountHistory.executeQuery()) {
                rs.next();
            }
        }

        private void update(PreparedStatement ps, long delta, int id) throws SQLException, ValidationException {
            ps.setLong(1, delta);
            ps.setInt(2, id);
            Check.equal("h2 rows updated for id " + id, 1, ps.executeUpdate());
        }

        private void history(int account, Integer other, Integer teller, Integer branch, long delta, String kind)
                throws SQLException {
            addHistory.setInt(1, account);
            addHistory.setObject(2, other);
            addHistory.setObject(3, teller);
            addHistory.setObject(4, branch);
            addHistory.setLong(5, delta);
            addHistory.setString(6, kind);
            addHistory.setString(7, "jvmos-dacapo");
            addHistory.executeUpdate();
            historyRows++;
        }

        @Override
        public void close() throws SQLException {
            conn.close();
        }
    }
}
