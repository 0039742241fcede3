package org.jvmos.workloads.matmul;

import java.io.IOException;
import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jvmos.workloads.Cli;
import org.jvmos.workloads.Workload;

/**
 * A worker, spawned by {@link Matmul}: opens its endpoint, prints "PORT p", takes the peers'
 * ports (SETUP), then runs the tasks the manager sends until DONE, answers DONE with its
 * counters (STATS) and exits. Gives up at {@code --max-seconds} or when the manager's process
 * ends.
 *
 * <pre>MatmulWorker --mechanism M --id I --nodes K+1 --manager-port P [--max-seconds 300]
 *              [--drop-every 0] [--start-delay-ms 0]</pre>
 */
public final class MatmulWorker extends Workload {

    public MatmulWorker() {
        super(List.of("mechanism", "id", "nodes", "manager-port", "max-seconds", "drop-every",
                "start-delay-ms"), List.of());
    }

    public static void main(String[] args) {
        // the worker is a child of the manager: it goes when the manager goes
        ProcessHandle.current().parent().ifPresent(p -> p.onExit().thenRun(() -> Runtime.getRuntime().halt(3)));
        new MatmulWorker().runAndExit(args);
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        String mechanism = cli.string("mechanism", null);
        if (!Transports.NAMES.contains(mechanism)) {
            throw new Cli.UsageException("unknown mechanism '" + mechanism + "'");
        }
        int nodes = cli.intValue("nodes", 0, 2, 65);
        int id = cli.intValue("id", 0, 1, nodes - 1);
        int managerPort = cli.intValue("manager-port", 0, 1, 65535);
        long maxSeconds = cli.longValue("max-seconds", 300, 1, 24 * 3600L);
        int dropEvery = cli.intValue("drop-every", 0, 0, 1_000_000);
        long startDelayMs = cli.longValue("start-delay-ms", 0, 0, 3_600_000L);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(maxSeconds);
        try (Node node = new Node(id, Transports.create(mechanism, dropEvery), deadline)) {
            if (startDelayMs > 0) {
                // test hook: a worker that is late to start
                Thread.sleep(Math.min(startDelayMs, TimeUnit.SECONDS.toMillis(maxSeconds)));
            }
            int port = node.open(nodes, managerPort);
            Cli.announce(port, "", out);
            Message setup = node.receive(0, Message.SETUP, Mailbox.ANY);
            node.transport.peers(setup.data);
            while (true) {
                Message m = node.receive(0, Mailbox.ANY, Mailbox.ANY);
                if (m.kind == Message.TASK_SPA) {
                    Spa.worker(node, m);
                } else if (m.kind == Message.TASK_MCA) {
                    Mca.worker(node, m);
                } else if (m.kind == Message.DONE) {
                    node.send(0, new Message(Message.STATS, id, 0, 1, 12, node.statsWords()));
                    return 0;
                } else {
                    throw new IOException("unexpected " + Message.kindName(m.kind) + " from the manager");
                }
            }
        } catch (IOException e) {
            err.println("error: worker " + (id - 1) + ": " + Matmul.oneLine(e.getMessage()));
            return 1;
        } catch (InterruptedException e) {
            err.println("error: worker " + (id - 1) + ": interrupted");
            return 1;
        }
    }
}
