package org.jvmos.workloads.chat;

import org.jvmos.workloads.Cli;
import org.jvmos.workloads.ServerLifetime;
import org.jvmos.workloads.Workload;
import java.io.IOException;
import java.io.PrintStream;
import java.util.List;

/**
 * A VolanoMark-style chat server ({@link ChatHub}: two threads per connection, each message
 * broadcast to its room) on 127.0.0.1 only. Prints {@code PORT n} once listening and writes n to
 * {@code --port-file} (atomically); runs until SIGTERM or {@code --max-seconds}, then stops
 * accepting, closes every connection and prints one JSON line.
 *
 * <pre>ChatServer [--port 0] [--port-file P] [--threads platform|virtual] [--max-seconds 600]
 *           [--backlog 1024]</pre>
 */
public final class ChatServer extends Workload {

    ChatServer() {
        super(List.of("port", "port-file", "threads", "max-seconds", "backlog"), List.of());
    }

    public static void main(String[] args) {
        new ChatServer().runAndExit(args);
    }

    /** The --threads value as a spawner; virtual threads before JDK 21 are a usage error. */
    static Spawner spawner(String threads) throws Cli.UsageException {
        switch (threads) {
            case "platform":
                return Spawner.platform();
            case "virtual":
                if (!Spawner.virtualAvailable()) {
                    throw new Cli.UsageException("--threads virtual needs JDK 21 or later (this is "
                            + System.getProperty("java.version") + ")");
                }
                return Spawner.virtual();
            default:
                throw new Cli.UsageException("--threads must be platform or virtual, got '"
                        + threads + "'");
        }
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        int port = cli.intValue("port", 0, 0, 65535);
        String portFile = cli.string("port-file", "");
        Spawner spawner = spawner(cli.string("threads", "platform"));
        long maxSeconds = cli.longValue("max-seconds", 600, 1, 7 * 24 * 3600L);
        int backlog = cli.intValue("backlog", 1024, 1, 65535);

        ChatHub hub;
        try {
            hub = ChatHub.start(port, backlog, spawner);
        } catch (IOException e) {
            err.println("error: cannot listen on 127.0.0.1:" + port + ": " + e.getMessage());
            return 1;
        }
        try (ServerLifetime life = ServerLifetime.begin("chat")) {
            Cli.announce(hub.port(), portFile, out);
            boolean signalled = life.await(maxSeconds);
            hub.close();
            out.println("{\"workload\":\"chat-server\"," + hub.summary() + ",\"stopped_by\":\""
                    + (signalled ? "signal" : "max-seconds") + "\",\"java_version\":\""
                    + System.getProperty("java.version") + "\"}");
            out.flush();
            return 0;
        } catch (IOException e) {
            err.println("error: cannot write the port file " + portFile + ": " + e.getMessage());
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("error: interrupted");
            return 1;
        } finally {
            hub.close();
        }
    }
}
