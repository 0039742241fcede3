package org.jvmos.workloads.matmul;

import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.jvmos.workloads.Cli;
import org.jvmos.workloads.GcRecord;
import org.jvmos.workloads.Workload;

/**
 * Seed 001's distributed matrix multiplication, the manager (the jar's main class):
 *
 * <pre>java -jar jvmos-matmul.jar --mechanism rmi-serializable|rmi-externalizable|socket|datagram
 *      --algorithm spa|mca|sequential [--n 100] [--k 4] [--seed 1] [--repeat 1]
 *      [--max-seconds 300] [--worker-start-timeout 30]
 *      [--drop-every 0] [--worker-start-delay-ms 0]   (test options)</pre>
 *
 * Spawns k worker JVMs (unless sequential), multiplies {@code --repeat} pairs of random n x n
 * matrices (integers 0..20), checks every product against a sequential reference and prints one
 * JSON line. See the module's README for the fields.
 */
public final class Matmul extends Workload {
    /** Bound on a message's ints (a whole n x n matrix and a block, n = MAX_N). */
    static final int MAX_INTS = 3 * 4000 * 4000;
    static final int MAX_N = 4000;

    public Matmul() {
        super(List.of("mechanism", "algorithm", "n", "k", "seed", "repeat", "max-seconds",
                "worker-start-timeout", "drop-every", "worker-start-delay-ms"), List.of());
    }

    public static void main(String[] args) {
        new Matmul().runAndExit(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        String mechanism = cli.string("mechanism", "socket");
        if (!Transports.NAMES.contains(mechanism)) {
            throw new Cli.UsageException("unknown mechanism '" + mechanism + "' (one of "
                    + String.join(", ", Transports.NAMES) + ")");
        }
        String algorithm = cli.string("algorithm", "spa");
        if (!List.of("spa", "mca", "sequential").contains(algorithm)) {
            throw new Cli.UsageException("unknown algorithm '" + algorithm + "' (one of spa, mca, sequential)");
        }
        int n = cli.intValue("n", 100, 1, MAX_N);
        int k = cli.intValue("k", 4, 1, 64);
        long seed = cli.longValue("seed", 1, Long.MIN_VALUE, Long.MAX_VALUE);
        int repeat = cli.intValue("repeat", 1, 1, 1000);
        long maxSeconds = cli.longValue("max-seconds", 300, 1, 24 * 3600L);
        long startTimeout = cli.longValue("worker-start-timeout", 30, 1, 600);
        int dropEvery = cli.intValue("drop-every", 0, 0, 1_000_000);
        if (dropEvery == 1) {
            throw new Cli.UsageException("--drop-every must be 0 (off) or at least 2");
        }
        if (dropEvery > 0 && !mechanism.equals("datagram")) {
            throw new Cli.UsageException("--drop-every applies to --mechanism datagram only");
        }
        long startDelayMs = cli.longValue("worker-start-delay-ms", 0, 0, 3_600_000L);
        String grid = null;
        if (algorithm.equals("spa") && k > n) {
            throw new Cli.UsageException("--algorithm spa needs k <= n (k=" + k + ", n=" + n + ")");
        }
        if (algorithm.equals("mca")) {
            int[] g = Mca.grid(k);
            grid = g[0] + "x" + g[1];
            if (n % g[0] != 0 || n % g[1] != 0) {
                throw new Cli.UsageException("--algorithm mca with k=" + k + " uses a " + grid
                        + " grid of workers: n must be divisible by " + g[0] + " and " + g[1] + " (n=" + n + ")");
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(maxSeconds);
        Cli.Json json = new Cli.Json().put("workload", "matmul").put("mechanism", algorithm.equals("sequential") ? null : mechanism)
                .put("algorithm", algorithm).put("n", n).put("k", algorithm.equals("sequential") ? 0 : k)
                .put("seed", seed).put("repeat", repeat).put("grid", grid);
        try {
            if (algorithm.equals("sequential")) {
                sequential(json, n, seed, repeat);
            } else {
                distributed(json, mechanism, algorithm, n, k, seed, repeat, deadline, maxSeconds,
                        startTimeout, dropEvery, startDelayMs);
            }
        } catch (IOException e) {
            err.println("error: " + oneLine(e.getMessage()));
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("error: interrupted");
            return 1;
        }
        out.println(json.put("validated", true).put("java_version", System.getProperty("java.version")));
        return 0;
    }

    /** A message on one line (RMI's nest exceptions over several). */
    static String oneLine(String s) {
        return s == null ? "failed" : s.replaceAll("\\s+", " ").strip();
    }

    private static double ms(long nanos) {
        return nanos / 1e6;
    }

    /** One way of multiplying a and b (n x n) in repetition r. */
    private interface Product {
        int[] of(int[] a, int[] b, int r) throws IOException, InterruptedException;
    }

    /**
     * The repetitions both paths share: random a and b from the seed, the product timed, the
     * reference product timed apart and compared. Returns {product ns, reference ns}.
     */
    private static long[] repetitions(Product product, int n, long seed, int repeat)
            throws IOException, InterruptedException {
        SplittableRandom rng = new SplittableRandom(seed);
        long total = 0;
        long reference = 0;
        for (int r = 0; r < repeat; r++) {
            int[] a = Matrices.random(n, rng);
            int[] b = Matrices.random(n, rng);
            long t0 = System.nanoTime();
            int[] c = product.of(a, b, r);
            total += System.nanoTime() - t0;
            t0 = System.nanoTime();
            long[] expected = Matrices.reference(a, b, n);
            reference += System.nanoTime() - t0;
            check(c, expected, n, r);
        }
        return new long[] {total, reference};
    }

    private static void sequential(Cli.Json json, final int n, long seed, int repeat)
            throws IOException, InterruptedException {
        long[] t = repetitions(new Product() {
            @Override
            public int[] of(int[] a, int[] b, int r) {
                return Matrices.multiply(a, b, n);
            }
        }, n, seed, repeat);
        json.put("total_ms", ms(t[0]), 3).put("sequential_ms", ms(t[0]), 3)
                .put("reference_ms", ms(t[1]), 3);
        long[] gc = GcRecord.snapshot();
        for (int g = 0; g < GcRecord.KEYS.length; g++) {
            json.put("manager_" + GcRecord.KEYS[g], gc[g]);
        }
    }

    private static void check(int[] c, long[] expected, int n, int rep) throws IOException {
        String bad = Matrices.mismatch(c, expected, n);
        if (bad != null) {
            throw new IOException("product mismatch in repetition " + rep + ": " + bad);
        }
    }

    private static void distributed(Cli.Json json, String mechanism, String algorithm, int n, int k,
            long seed, int repeat, long deadline, long maxSeconds, long startTimeout, int dropEvery,
            long startDelayMs) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        try (Node node = new Node(0, Transports.create(mechanism, dropEvery), deadline);
             WorkerProcesses workers = new WorkerProcesses(k)) {
            int managerPort = node.open(k + 1, 0);
            for (int w = 0; w < k; w++) {
                List<String> args = new ArrayList<>(List.of("--mechanism", mechanism,
                        "--id", Integer.toString(w + 1), "--nodes", Integer.toString(k + 1),
                        "--manager-port", Integer.toString(managerPort),
                        "--max-seconds", Long.toString(maxSeconds)));
                if (dropEvery > 0) {
                    args.addAll(List.of("--drop-every", Integer.toString(dropEvery)));
                }
                if (startDelayMs > 0) {
                    args.addAll(List.of("--start-delay-ms", Long.toString(startDelayMs)));
                }
                workers.start(w, args);
            }
            int[] workerPorts = workers.awaitPorts(Math.min(startTimeout, maxSeconds));
            int[] ports = new int[k + 1];
            ports[0] = managerPort;
            System.arraycopy(workerPorts, 0, ports, 1, k);
            node.transport.peers(ports);
            try {
                for (int w = 0; w < k; w++) {
                    node.send(w + 1, new Message(Message.SETUP, 0, 0, 1, k + 1, ports.clone()));
                }
                long startup = System.nanoTime() - t0;
                final boolean spa = algorithm.equals("spa");
                long[] t = repetitions(new Product() {
                    @Override
                    public int[] of(int[] a, int[] b, int r) throws IOException, InterruptedException {
                        return spa ? Spa.manager(node, a, b, n, k, r) : Mca.manager(node, a, b, n, k, r);
                    }
                }, n, seed, repeat);
                long total = t[0];
                long reference = t[1];
                double[] wSend = new double[k];
                double[] wRecv = new double[k];
                double[] wComm = new double[k];
                long[] wCalls = new long[k];
                long[] wBytesSent = new long[k];
                long[] wBytesRecv = new long[k];
                long[] wRetrans = new long[k];
                long[][] wGc = new long[GcRecord.KEYS.length][k];
                long calls = node.sends;
                long retrans = 0;
                for (int w = 0; w < k; w++) {
                    node.send(w + 1, new Message(Message.DONE, 0, 0, 0, 0, new int[0]));
                    long[] s = Message.unpackLongs(node.receive(w + 1, Message.STATS, Mailbox.ANY).data);
                    wSend[w] = ms(s[0]);
                    wRecv[w] = ms(s[1]);
                    wComm[w] = ms(s[0] + s[1]);
                    wCalls[w] = s[2];
                    wBytesSent[w] = s[3];
                    wBytesRecv[w] = s[4];
                    wRetrans[w] = s[5];
                    for (int g = 0; g < GcRecord.KEYS.length; g++) {
                        wGc[g][w] = s[Node.STATS_LONGS + g];
                    }
                    calls += s[2];
                    retrans += s[5];
                }
                long managerRetrans = node.transport.retransmissions();
                workers.awaitExit(10);
                json.put("total_ms", ms(total), 3)
                        .put("startup_ms", ms(startup), 3)
                        .put("manager_comm_ms", ms(node.sendNanos + node.recvNanos), 3)
                        .put("manager_send_ms", ms(node.sendNanos), 3)
                        .put("manager_recv_ms", ms(node.recvNanos), 3)
                        .put("workers_comm_ms", wComm)
                        .put("workers_send_ms", wSend)
                        .put("workers_recv_ms", wRecv)
                        .put("calls", calls)
                        .put("manager_calls", node.sends)
                        .put("worker_calls", wCalls)
                        .put("bytes_sent", node.bytesSent)
                        .put("bytes_received", node.bytesReceived)
                        .put("workers_bytes_sent", wBytesSent)
                        .put("workers_bytes_received", wBytesRecv)
                        .put("retransmissions", managerRetrans + retrans)
                        .put("manager_retransmissions", managerRetrans)
                        .put("workers_retransmissions", wRetrans)
                        .put("reference_ms", ms(reference), 3);
                // each JVM's garbage collection over its whole life (start-up included): the
                // manager's as of now, each worker's as of its last message
                long[] mGc = GcRecord.snapshot();
                for (int g = 0; g < GcRecord.KEYS.length; g++) {
                    json.put("manager_" + GcRecord.KEYS[g], mGc[g]).put("workers_" + GcRecord.KEYS[g], wGc[g]);
                }
            } catch (IOException e) {
                throw new IOException(e.getMessage() + workers.deadWorker(), e);
            }
        }
    }
}
