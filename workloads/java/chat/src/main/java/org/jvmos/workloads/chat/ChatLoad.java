package org.jvmos.workloads.chat;

import org.jvmos.workloads.Cli;
import org.jvmos.workloads.Workload;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The load generator of the chat server, VolanoMark's client: {@code --rooms} rooms of
 * {@code --users-per-room} users, one TCP connection and one thread per user. Every user joins
 * its room (r0, r1, ...); once all users of all rooms have joined, each sends
 * {@code --messages} messages of {@code --message-bytes} bytes to its room, one at a time (the
 * next once its previous one has come back to it), and reads until it has received every
 * message of its room, its own included; then it says BYE and waits for the server to close.
 * With {@code --rate R} (messages per second per user) the load is open-loop instead: each
 * user sends its messages on a fixed schedule, one every 1/R s from a start spread over the
 * users, whether or not the earlier ones came back (reading what arrives in between), so the
 * offered load does not depend on how fast the server answers. A message is then stamped with
 * its scheduled time: a send that fell behind its schedule counts its lag in the latency.
 *
 * <p>A message's text is {@code u<sender> <seq> <send time, ns since the run's start>}, padded
 * with {@code x} to the requested size. Each user records the receive time of every (sender,
 * seq) of its room: a second copy is a duplicate, a hole at the end a lost message, a frame of
 * another room a failure. Bounded in count and in time ({@code --max-seconds}: every read times
 * out by then).
 *
 * <p>Last stdout line: JSON with the counts, the throughput (deliveries per second from the
 * first send to the last delivery, VolanoMark's "messages delivered per second") and latencies
 * (a message's send to its delivery to the last member of its room; each single delivery).
 * Exit 0 only when every message reached every member of its room exactly once; 1 otherwise,
 * and at once with one line if the server is not there; 2 for bad usage.
 *
 * <pre>ChatLoad --port P [--host 127.0.0.1] [--rooms 5] [--users-per-room 20] [--messages 20]
 *         [--message-bytes 40] [--max-seconds 300] [--pause-ms 0] [--rate 0]
 *         [--connect-timeout-ms 5000]</pre>
 */
public final class ChatLoad extends Workload {

    /** At most this many users (one socket and one thread each). */
    static final int MAX_USERS = 10_000;
    /** At most this many deliveries (each keeps its receive time: 8 bytes). */
    static final long MAX_DELIVERIES = 20_000_000L;
    /** Largest message text, well under the server's frame limit. */
    static final int MAX_MESSAGE_BYTES = 60_000;
    /** How long a user waits for the server to close after its BYE. */
    private static final long BYE_WAIT_NS = 5_000_000_000L;

    ChatLoad() {
        super(List.of("port", "host", "rooms", "users-per-room", "messages", "message-bytes",
                "max-seconds", "pause-ms", "rate", "connect-timeout-ms"), List.of());
    }

    public static void main(String[] args) {
        new ChatLoad().runAndExit(args);
    }

    /** The bytes of the longest header ({@code u<sender> <seq> <ns>}) this run can send. */
    static int headerBytes(int usersPerRoom, int messages, long maxSeconds) {
        return 1 + digits(usersPerRoom - 1) + 1 + digits(messages - 1) + 1
                + digits(maxSeconds * 1_000_000_000L);
    }

    private static int digits(long n) {
        return Long.toString(n).length();
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        int port = (int) cli.longValue("port", -1, 1, 65535);
        if (port < 0) {
            throw new Cli.UsageException("missing required option --port");
        }
        String hostName = cli.string("host", "127.0.0.1");
        InetAddress host = loopback(hostName);
        int rooms = cli.intValue("rooms", 5, 1, MAX_USERS);
        int perRoom = cli.intValue("users-per-room", 20, 1, MAX_USERS);
        int messages = cli.intValue("messages", 20, 1, 1_000_000);
        int messageBytes = cli.intValue("message-bytes", 40, 1, MAX_MESSAGE_BYTES);
        long maxSeconds = cli.longValue("max-seconds", 300, 1, 86_400);
        long pauseMs = cli.longValue("pause-ms", 0, 0, 60_000);
        // --rate: messages per second per user, in thousandths (0: closed loop)
        long rateMilli = Math.round(parseRate(cli.string("rate", "0")) * 1000);
        if (rateMilli > 0 && pauseMs > 0) {
            throw new Cli.UsageException("--rate and --pause-ms exclude each other");
        }
        int connectTimeout = cli.intValue("connect-timeout-ms", 5000, 1, 600_000);
        long users = (long) rooms * perRoom;
        if (users > MAX_USERS) {
            throw new Cli.UsageException("--rooms x --users-per-room = " + users
                    + " users, more than " + MAX_USERS);
        }
        long expected = users * perRoom * messages;
        if (expected > MAX_DELIVERIES) {
            throw new Cli.UsageException("--rooms x --users-per-room^2 x --messages = " + expected
                    + " deliveries, more than the " + MAX_DELIVERIES + " this client tracks");
        }
        int header = headerBytes(perRoom, messages, maxSeconds);
        if (messageBytes < header) {
            throw new Cli.UsageException("--message-bytes must be at least " + header
                    + " to hold this run's header (sender, sequence number, send time), got "
                    + messageBytes);
        }

        Run run = new Run(rooms, perRoom, messages, messageBytes, pauseMs, maxSeconds);
        run.intervalNs = rateMilli > 0 ? 1_000_000_000_000L / rateMilli : 0;
        int n = (int) users;
        Socket[] sockets = new Socket[n];
        InetSocketAddress address = new InetSocketAddress(host, port);
        for (int i = 0; i < n; i++) {
            Socket s = new Socket();
            sockets[i] = s;
            try {
                long left = (run.deadline - System.nanoTime()) / 1_000_000;
                s.connect(address, (int) Math.max(1, Math.min(connectTimeout, left)));
                s.setTcpNoDelay(true);
            } catch (IOException e) {
                closeAll(sockets);
                err.println("error: cannot connect to " + hostName + ":" + port + ": "
                        + e.getMessage() + (i > 0 ? " (after " + i + " connections)" : ""));
                return 1;
            }
        }
        run.sockets = sockets;
        User[] all = new User[n];
        Thread[] threads = new Thread[n];
        for (int i = 0; i < n; i++) {
            all[i] = new User(run, i / perRoom, i % perRoom, sockets[i]);
            threads[i] = new Thread(all[i], "chat-user-" + (i / perRoom) + "-" + (i % perRoom));
            threads[i].setDaemon(true);
        }
        for (Thread t : threads) {
            t.start();
        }
        boolean interrupted = false;
        try {
            for (Thread t : threads) {
                long left = (run.deadline + 2_000_000_000L - System.nanoTime()) / 1_000_000;
                t.join(Math.max(1, left));
            }
        } catch (InterruptedException e) {
            interrupted = true;
        }
        boolean stragglers = false;
        for (Thread t : threads) {
            stragglers |= t.isAlive();
        }
        if (stragglers || interrupted) {
            run.abort(null);
            for (Thread t : threads) {
                try {
                    t.join(1000);
                } catch (InterruptedException e) {
                    interrupted = true;
                    break;
                }
            }
        }
        closeAll(sockets);
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        return report(run, all, stragglers, out, err);
    }

    /** --rate's value: a positive number of messages per second (at most 10,000), or 0. */
    static double parseRate(String v) throws Cli.UsageException {
        double r;
        try {
            r = Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new Cli.UsageException("--rate: give messages per second per user, got '" + v + "'");
        }
        if (!(r >= 0 && r <= 10_000) || (r > 0 && r < 0.001)) {
            throw new Cli.UsageException("--rate must be 0 (closed loop) or between 0.001 and "
                    + "10000 messages per second per user, got " + v);
        }
        return r;
    }

    /** {@code name} if it is a loopback address; anything else is a usage error. */
    static InetAddress loopback(String name) throws Cli.UsageException {
        InetAddress a;
        try {
            a = InetAddress.getByName(name);
        } catch (UnknownHostException e) {
            throw new Cli.UsageException("--host: unknown host '" + name + "'");
        }
        if (!a.isLoopbackAddress()) {
            throw new Cli.UsageException("--host must be a loopback address (the load stays on "
                    + "this machine), got " + name);
        }
        return a;
    }

    private static void closeAll(Socket[] sockets) {
        for (Socket s : sockets) {
            if (s != null) {
                try {
                    s.close();
                } catch (IOException e) {
                    // closed anyway
                }
            }
        }
    }

    // ---------------------------------------------------------------- results

    private static int report(Run run, User[] users, boolean stragglers, PrintStream out,
                              PrintStream err) {
        int perRoom = run.perRoom;
        int m = run.messages;
        long expected = (long) users.length * perRoom * m;
        long sent = 0;
        long received = 0;
        long duplicated = 0;
        long wrongRoom = 0;
        long badFrames = 0;
        boolean timedOut = stragglers;
        String firstError = run.firstError;
        long lastDelivery = 0;
        for (User u : users) {
            sent += u.sent;
            received += u.received;
            duplicated += u.duplicates;
            wrongRoom += u.wrongRoom;
            badFrames += u.badFrames;
            timedOut |= u.timedOut;
            for (long t : u.recvAt) {
                lastDelivery = Math.max(lastDelivery, t);
            }
        }
        long late = 0;
        long maxLag = 0;
        for (User u : users) {
            late += u.late;
            maxLag = Math.max(maxLag, u.maxLagNs);
        }
        long firstSend = Long.MAX_VALUE;
        for (long t : run.sentAt) {
            if (t > 0) {
                firstSend = Math.min(firstSend, t);
            }
        }
        // per message: send -> delivery to the last member of its room; per delivery too
        long[] whole = new long[(int) Math.min(sent, Integer.MAX_VALUE)];
        int wholeN = 0;
        long[] single = new long[(int) Math.min(received, Integer.MAX_VALUE)];
        int singleN = 0;
        for (int r = 0; r < run.rooms; r++) {
            for (int s = 0; s < perRoom; s++) {
                for (int q = 0; q < m; q++) {
                    long sentT = run.sentAt[(r * perRoom + s) * m + q];
                    if (sentT == 0) {
                        continue;
                    }
                    long last = 0;
                    boolean all = true;
                    for (int u = 0; u < perRoom; u++) {
                        long got = users[r * perRoom + u].recvAt[s * m + q];
                        if (got == 0) {
                            all = false;
                        } else {
                            last = Math.max(last, got);
                            if (singleN < single.length) {
                                single[singleN++] = got - sentT;
                            }
                        }
                    }
                    if (all && wholeN < whole.length) {
                        whole[wholeN++] = last - sentT;
                    }
                }
            }
        }
        whole = Arrays.copyOf(whole, wholeN);
        single = Arrays.copyOf(single, singleN);
        Arrays.sort(whole);
        Arrays.sort(single);
        long wallNs = firstSend == Long.MAX_VALUE || lastDelivery <= firstSend ? 0 : lastDelivery - firstSend;
        long joinedAt = run.joinedAt.get();
        long lost = expected - received;
        String stoppedBy = timedOut ? "max-seconds" : firstError != null ? "error" : "done";
        out.println("{\"workload\":\"chat-load\",\"rooms\":" + run.rooms + ",\"users_per_room\":"
                + perRoom + ",\"users\":" + users.length + ",\"messages_per_user\":" + m
                + ",\"message_bytes\":" + run.messageBytes + ",\"pause_ms\":" + run.pauseMs
                + ",\"rate_per_user\":" + (run.intervalNs > 0 ? fixed(1e9 / run.intervalNs, 3) : "0")
                + ",\"sends_late\":" + late + ",\"max_send_lag_ms\":" + fixed(maxLag / 1e6, 3)
                + ",\"messages_sent\":" + sent + ",\"deliveries\":" + received
                + ",\"expected_deliveries\":" + expected + ",\"lost\":" + lost
                + ",\"duplicated\":" + duplicated + ",\"wrong_room\":" + wrongRoom
                + ",\"bad_frames\":" + badFrames + ",\"join_s\":"
                + (joinedAt == 0 ? "null" : fixed(joinedAt / 1e9, 3)) + ",\"wall_s\":"
                + fixed(wallNs / 1e9, 3) + ",\"messages_per_s\":" + rate(received, wallNs)
                + ",\"sent_per_s\":" + rate(sent, wallNs) + ",\"latency_us\":" + latency(whole)
                + ",\"delivery_latency_us\":" + latency(single) + ",\"stopped_by\":\""
                + stoppedBy + "\",\"java_version\":\"" + System.getProperty("java.version")
                + "\"}");
        out.flush();
        boolean faulty = lost != 0 || duplicated != 0 || wrongRoom != 0 || badFrames != 0;
        if (timedOut) {
            err.println("error: --max-seconds " + run.maxSeconds + " reached with " + lost + " of "
                    + expected + " deliveries missing" + (duplicated != 0 ? ", " + duplicated
                    + " duplicated" : "") + (firstError != null ? "; first error: " + firstError : ""));
            return 1;
        }
        if (faulty) {
            err.println("error: " + lost + " of " + expected + " deliveries missing, " + duplicated
                    + " duplicated, " + wrongRoom + " from another room, " + badFrames
                    + " malformed" + (firstError != null ? "; first error: " + firstError : ""));
            return 1;
        }
        if (firstError != null) {
            err.println("error: " + firstError);
            return 1;
        }
        return 0;
    }

    private static String latency(long[] sortedNs) {
        return "{\"p50\":" + pct(sortedNs, 50) + ",\"p99\":" + pct(sortedNs, 99) + ",\"max\":"
                + pct(sortedNs, 100) + ",\"n\":" + sortedNs.length + "}";
    }

    /** Nearest-rank percentile of nanosecond values, in whole microseconds. */
    static long pct(long[] sorted, int p) {
        if (sorted.length == 0) {
            return 0;
        }
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1000;
    }

    private static String rate(long count, long ns) {
        return ns <= 0 ? "null" : fixed(count / (ns / 1e9), 1);
    }

    private static String fixed(double d, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", d);
    }

    // ---------------------------------------------------------------- the users

    /** What all users share: the parameters, the clock, the barrier, the send times. */
    static final class Run {
        final int rooms;
        final int perRoom;
        final int messages;
        final int messageBytes;
        final long pauseMs;
        final long maxSeconds;
        final long base = System.nanoTime();
        /** Open loop: ns between two sends of one user (0: closed loop). */
        long intervalNs;
        final long deadline;
        final CountDownLatch joined;
        final AtomicLong joinedAt = new AtomicLong();
        /** Send time (ns since base, at least 1) of message (room, sender, seq); 0 = not sent. */
        final long[] sentAt;
        volatile boolean aborted;
        volatile String firstError;
        volatile Socket[] sockets;

        Run(int rooms, int perRoom, int messages, int messageBytes, long pauseMs, long maxSeconds) {
            this.rooms = rooms;
            this.perRoom = perRoom;
            this.messages = messages;
            this.messageBytes = messageBytes;
            this.pauseMs = pauseMs;
            this.maxSeconds = maxSeconds;
            this.deadline = base + maxSeconds * 1_000_000_000L;
            this.joined = new CountDownLatch(rooms * perRoom);
            this.sentAt = new long[rooms * perRoom * messages];
        }

        long now() {
            return Math.max(1, System.nanoTime() - base);
        }

        /** Stops every user (closes all sockets); {@code why} is kept if it is the first error. */
        synchronized void abort(String why) {
            if (why != null && firstError == null) {
                firstError = why;
            }
            if (!aborted) {
                aborted = true;
                Socket[] all = sockets;
                if (all != null) {
                    closeAll(all);
                }
            }
        }
    }

    /** Ran out of time: the deadline passed while waiting. */
    private static final class DeadlineException extends IOException {
        private static final long serialVersionUID = 1L;

        DeadlineException() {
            super("deadline reached");
        }
    }

    /** One chat user: its connection and its record of what it received. */
    static final class User implements Runnable {
        private final Run run;
        private final int room;
        private final int index;
        private final Socket socket;
        private final byte[] roomBytes;
        private final String prefix;
        /** Length of "MSG r<room> ": the message text starts after it. */
        private final int textStart;
        private final long[] parsed = new long[1];
        /** Receive time (ns since base) of (sender, seq) at sender * messages + seq; 0 = not yet. */
        final long[] recvAt;
        long sent;
        long received;
        long duplicates;
        long wrongRoom;
        long badFrames;
        /** Open loop: sends more than 1 ms behind their schedule, and the largest lag. */
        long late;
        long maxLagNs;
        boolean timedOut;
        private FrameReader in;
        private OutputStream out;

        User(Run run, int room, int index, Socket socket) {
            this.run = run;
            this.room = room;
            this.index = index;
            this.socket = socket;
            this.roomBytes = ("r" + room).getBytes(StandardCharsets.US_ASCII);
            this.prefix = "MSG r" + room + " u" + index + " ";
            this.textStart = ("MSG r" + room + " ").length();
            this.recvAt = new long[run.perRoom * run.messages];
        }

        private String who() {
            return "user r" + room + "/u" + index;
        }

        @Override
        public void run() {
            boolean counted = false;
            try {
                in = new FrameReader(socket.getInputStream(), ChatHub.MAX_FRAME);
                out = new BufferedOutputStream(socket.getOutputStream(), 8192);
                out.write(("JOIN r" + room + " u" + index + "\n").getBytes(StandardCharsets.US_ASCII));
                out.flush();
                int n = next(run.deadline);
                if (n < 0) {
                    throw new EOFException("connection closed by the server before JOINED");
                }
                if (!FrameReader.startsWith(in.frame(), n, "JOINED r" + room + " ")) {
                    throw new IOException("expected JOINED r" + room + ", got '"
                            + new String(in.frame(), 0, Math.min(n, 80), StandardCharsets.UTF_8) + "'");
                }
                counted = true;
                run.joined.countDown();
                if (run.joined.getCount() == 0) {
                    run.joinedAt.compareAndSet(0, run.now());
                }
                long left = run.deadline - System.nanoTime();
                if (left <= 0 || !run.joined.await(left, TimeUnit.NANOSECONDS)) {
                    throw new DeadlineException();
                }
                if (run.aborted) {
                    return;
                }
                chat();
                bye();
            } catch (DeadlineException | SocketTimeoutException e) {
                timedOut = true;
                run.abort(null);
            } catch (IOException e) {
                if (!run.aborted) {
                    run.abort(who() + ": " + e.getMessage());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                run.abort(who() + ": interrupted");
            } finally {
                if (!counted) {
                    run.abort(null);
                    run.joined.countDown();
                }
            }
        }

        /** One message, stamped with time t (ns since the run's base). */
        private void send(StringBuilder sb, int seq, long t) throws IOException {
            int m = run.messages;
            sb.setLength(0);
            sb.append(prefix).append(seq).append(' ').append(t);
            int target = textStart + run.messageBytes;
            if (sb.length() < target) {
                sb.append(' ');
                while (sb.length() < target) {
                    sb.append('x');
                }
            }
            sb.append('\n');
            run.sentAt[(room * run.perRoom + index) * m + seq] = t;
            out.write(sb.toString().getBytes(StandardCharsets.US_ASCII));
            out.flush();
            sent++;
        }

        /** Open loop: message seq at start + seq x interval, reading what comes in between. */
        private void openLoop() throws IOException {
            int m = run.messages;
            long users = (long) run.rooms * run.perRoom;
            long start = System.nanoTime()
                    + (room * (long) run.perRoom + index) * run.intervalNs / users;
            StringBuilder sb = new StringBuilder(run.messageBytes + 32);
            for (int seq = 0; seq < m; seq++) {
                long due = start + seq * run.intervalNs;
                readUntil(due);
                long lag = System.nanoTime() - due;
                if (lag > 1_000_000L) {
                    late++;
                }
                maxLagNs = Math.max(maxLagNs, lag);
                send(sb, seq, Math.max(1, due - run.base));
            }
            long total = (long) run.perRoom * m;
            while (received < total) {
                receive(run.deadline);
            }
        }

        /** Reads frames until {@code due} (a read that times out keeps its partial frame). */
        private void readUntil(long due) throws IOException {
            while (true) {
                long now = System.nanoTime();
                if (now >= run.deadline) {
                    throw new DeadlineException();
                }
                long left = (Math.min(due, run.deadline) - now) / 1_000_000;
                if (left <= 0) {
                    return;
                }
                socket.setSoTimeout((int) Math.min(left, Integer.MAX_VALUE));
                int n;
                try {
                    n = in.next();
                } catch (SocketTimeoutException e) {
                    return;
                }
                if (!record(n)) {
                    throw new EOFException("connection closed by the server after " + received
                            + " of " + (long) run.perRoom * run.messages + " messages");
                }
            }
        }

        /** Sends the messages one at a time, each once the previous came back, then reads the rest. */
        private void chat() throws IOException, InterruptedException {
            if (run.intervalNs > 0) {
                openLoop();
                return;
            }
            int m = run.messages;
            long total = (long) run.perRoom * m;
            StringBuilder sb = new StringBuilder(run.messageBytes + 32);
            for (int seq = 0; seq < m; seq++) {
                send(sb, seq, run.now());
                int own = index * m + seq;
                while (recvAt[own] == 0) {
                    receive(run.deadline);
                }
                if (run.pauseMs > 0 && seq + 1 < m) {
                    long left = (run.deadline - System.nanoTime()) / 1_000_000;
                    if (left <= 0) {
                        throw new DeadlineException();
                    }
                    Thread.sleep(Math.min(run.pauseMs, left));
                }
            }
            while (received < total) {
                receive(run.deadline);
            }
        }

        /** BYE, then whatever still comes (a late copy is a duplicate) until the server closes. */
        private void bye() throws IOException {
            out.write("BYE\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            long until = Math.min(run.deadline, System.nanoTime() + BYE_WAIT_NS);
            try {
                while (receive(until)) {
                    // counted by receive
                }
            } catch (DeadlineException | SocketTimeoutException e) {
                // the server did not close in time: not a delivery failure
            }
        }

        /** Reads one frame and records it; false at the end of the stream. */
        private boolean receive(long until) throws IOException {
            return record(next(until));
        }

        /** Records frame n (its length; -1 at the end of the stream); false at the end. */
        private boolean record(int n) throws IOException {
            if (n < 0) {
                if (received < (long) run.perRoom * run.messages) {
                    throw new EOFException("connection closed by the server after " + received
                            + " of " + (long) run.perRoom * run.messages + " messages");
                }
                return false;
            }
            long now = run.now();
            byte[] b = in.frame();
            if (!FrameReader.startsWith(b, n, "MSG ")) {
                badFrames++;
                return true;
            }
            int p = 4;
            if (!FrameReader.regionEquals(b, n, p, roomBytes) || p + roomBytes.length >= n
                    || b[p + roomBytes.length] != ' ') {
                wrongRoom++;
                return true;
            }
            p += roomBytes.length + 1;
            if (p >= n || b[p] != 'u') {
                badFrames++;
                return true;
            }
            long[] v = parsed;
            int q = number(b, n, p + 1, v);
            long sender = v[0];
            int q2 = q < 0 || q >= n || b[q] != ' ' ? -1 : number(b, n, q + 1, v);
            long seq = v[0];
            if (q2 < 0 || (q2 < n && b[q2] != ' ') || sender >= run.perRoom || seq >= run.messages) {
                badFrames++;
                return true;
            }
            int k = (int) sender * run.messages + (int) seq;
            if (recvAt[k] != 0) {
                duplicates++;
            } else {
                recvAt[k] = now;
                received++;
            }
            return true;
        }

        /** Parses decimal digits at b[p...]; puts the value in v[0]; returns the index after them or -1. */
        private static int number(byte[] b, int n, int p, long[] v) {
            long x = 0;
            int i = p;
            while (i < n && b[i] >= '0' && b[i] <= '9' && i - p < 18) {
                x = x * 10 + (b[i] - '0');
                i++;
            }
            if (i == p) {
                return -1;
            }
            v[0] = x;
            return i;
        }

        /** The next frame, waiting at most until {@code until}; -1 at the end of the stream. */
        private int next(long until) throws IOException {
            long left = (until - System.nanoTime()) / 1_000_000;
            if (left <= 0) {
                throw new DeadlineException();
            }
            socket.setSoTimeout((int) Math.min(left, Integer.MAX_VALUE));
            return in.next();
        }
    }
}
