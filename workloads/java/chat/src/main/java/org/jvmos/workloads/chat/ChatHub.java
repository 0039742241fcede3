package org.jvmos.workloads.chat;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The chat server proper, VolanoMark's design: an accept thread, and per accepted connection
 * exactly two threads, a reader that takes the user's frames off the socket and puts each chat
 * message on the outbound queue of every member of the room (the sender included), and a writer
 * that drains the connection's own queue to the socket. Rooms are created by the first JOIN that
 * names them and dropped when their last member leaves.
 *
 * <p>Frames are lines of UTF-8 text. Client to server: {@code JOIN <room> <user>} (once, first),
 * {@code MSG <room> <text>} (the joined room only; the text is opaque), {@code BYE}. Server to
 * client: {@code JOINED <room> <members>} (before any message of the room), and each message as
 * {@code MSG <room> <text>}, byte for byte the frame the sender sent. Anything else is counted as
 * malformed and the connection is dropped.
 */
final class ChatHub implements AutoCloseable {

    /** Longest frame accepted from a client, in bytes, without its newline. */
    static final int MAX_FRAME = 65536;
    /** Longest room or user name, in bytes. */
    static final int MAX_NAME = 64;

    /** Put on a connection's queue to end its writer. */
    private static final byte[] POISON = new byte[0];

    private final ServerSocket server;
    private final Spawner spawner;
    private final Map<String, Room> rooms = new HashMap<>();            // guarded by roomsLock
    /** A j.u.c. lock rather than a monitor: virtual threads must not pin their carrier (JDK 21-23). */
    private final ReentrantLock roomsLock = new ReentrantLock();
    private final Set<Conn> live = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    private final long startedNs = System.nanoTime();
    private volatile boolean closed;
    private volatile long closedNs;

    private final LongAdder connections = new LongAdder();
    private final LongAdder messagesIn = new LongAdder();
    private final LongAdder framesOut = new LongAdder();
    private final LongAdder bytesIn = new LongAdder();
    private final LongAdder bytesOut = new LongAdder();
    private final LongAdder malformed = new LongAdder();
    private final LongAdder acceptErrors = new LongAdder();
    private final AtomicInteger threadsLive = new AtomicInteger();
    private final AtomicInteger threadsMax = new AtomicInteger();
    private int roomsMax;                                               // guarded by roomsLock

    private ChatHub(ServerSocket server, Spawner spawner) {
        this.server = server;
        this.spawner = spawner;
        threadUp();
        acceptor = new Thread(new Acceptor(), "chat-accept");
        acceptor.setDaemon(true);
    }

    /** Listens on 127.0.0.1:{@code port} (0 = any free port) and starts accepting. */
    static ChatHub start(int port, int backlog, Spawner spawner) throws IOException {
        ServerSocket ss = new ServerSocket();
        try {
            ss.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), backlog);
        } catch (IOException e) {
            ss.close();
            throw e;
        }
        ChatHub hub = new ChatHub(ss, spawner);
        hub.acceptor.start();
        return hub;
    }

    int port() {
        return server.getLocalPort();
    }

    String mode() {
        return spawner.mode();
    }

    /** Stops accepting and closes every connection (their threads then end). Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closedNs = System.nanoTime();
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            // closing anyway
        }
        for (Conn c : live) {
            c.closeSocket();
        }
    }

    // ---------------------------------------------------------------- statistics

    long connections() {
        return connections.sum();
    }

    long messagesIn() {
        return messagesIn.sum();
    }

    long framesOut() {
        return framesOut.sum();
    }

    long malformed() {
        return malformed.sum();
    }

    int threadsMax() {
        return threadsMax.get();
    }

    int liveConnections() {
        return live.size();
    }

    /** The summary line of {@code ChatServer}, minus the fields only it knows. */
    String summary() {
        long end = closed ? closedNs : System.nanoTime();
        int roomsPeak;
        roomsLock.lock();
        try {
            roomsPeak = roomsMax;
        } finally {
            roomsLock.unlock();
        }
        return "\"threads\":\"" + spawner.mode() + "\",\"port\":" + port() + ",\"connections\":"
                + connections.sum() + ",\"messages_in\":" + messagesIn.sum() + ",\"frames_out\":"
                + framesOut.sum() + ",\"bytes_in\":" + bytesIn.sum() + ",\"bytes_out\":"
                + bytesOut.sum() + ",\"malformed\":" + malformed.sum() + ",\"accept_errors\":"
                + acceptErrors.sum() + ",\"rooms_max\":" + roomsPeak + ",\"uptime_s\":"
                + String.format(java.util.Locale.ROOT, "%.3f", (end - startedNs) / 1e9)
                + ",\"max_threads_live\":" + threadsMax.get();
    }

    private void threadUp() {
        int n = threadsLive.incrementAndGet();
        int m;
        while (n > (m = threadsMax.get())) {
            if (threadsMax.compareAndSet(m, n)) {
                break;
            }
        }
    }

    private void threadDown() {
        threadsLive.decrementAndGet();
    }

    // ---------------------------------------------------------------- rooms

    /**
     * A room: its members, and a lock that makes joining atomic with respect to broadcasts.
     * Broadcasts share the read lock (they may run in parallel, each puts one frame on every
     * member's queue); join and leave take the write lock.
     */
    private static final class Room {
        final String name;
        final byte[] nameBytes;
        final ArrayList<Conn> members = new ArrayList<>();                // guarded by lock
        final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

        Room(String name) {
            this.name = name;
            this.nameBytes = name.getBytes(StandardCharsets.UTF_8);
        }

        /** Puts {@code frame} on the queue of every member, the sender included. */
        void broadcast(byte[] frame) {
            lock.readLock().lock();
            try {
                for (Conn member : members) {
                    member.queue.offer(frame);
                }
            } finally {
                lock.readLock().unlock();
            }
        }
    }

    /**
     * Adds {@code c} to room {@code name} and puts the JOINED ack on c's queue, both under the
     * room's write lock: a broadcast either ends before (c gets neither) or starts after (c gets
     * the ack first, then the message). So once a client holds its ack, every message sent to
     * the room from then on reaches it: the load's barrier relies on this.
     */
    private Room join(Conn c, String name) {
        roomsLock.lock();
        try {
            Room r = rooms.get(name);
            if (r == null) {
                r = new Room(name);
                rooms.put(name, r);
                roomsMax = Math.max(roomsMax, rooms.size());
            }
            r.lock.writeLock().lock();
            try {
                c.queue.offer(("JOINED " + name + " " + (r.members.size() + 1) + "\n")
                        .getBytes(StandardCharsets.UTF_8));
                r.members.add(c);
            } finally {
                r.lock.writeLock().unlock();
            }
            return r;
        } finally {
            roomsLock.unlock();
        }
    }

    private void leave(Conn c, Room r) {
        roomsLock.lock();
        try {
            r.lock.writeLock().lock();
            try {
                r.members.remove(c);
            } finally {
                r.lock.writeLock().unlock();
            }
            if (r.members.isEmpty() && rooms.get(r.name) == r) {
                rooms.remove(r.name);
            }
        } finally {
            roomsLock.unlock();
        }
    }

    // ---------------------------------------------------------------- threads

    private final class Acceptor implements Runnable {
        @Override
        public void run() {
            int next = 0;
            try {
                while (!closed) {
                    Socket s;
                    try {
                        s = server.accept();
                    } catch (IOException e) {
                        if (closed) {
                            return;
                        }
                        acceptErrors.increment();      // e.g. out of file descriptors
                        pause();
                        continue;
                    }
                    connections.increment();
                    serve(s, next++);
                }
            } finally {
                threadDown();
            }
        }

        private void pause() {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Starts the writer, then the reader, of the connection {@code s}. */
    private void serve(Socket s, int n) {
        Conn c = new Conn(s);
        live.add(c);
        if (closed) {               // close() may have run before c was in live
            c.closeSocket();
        }
        try {
            s.setTcpNoDelay(true);
        } catch (IOException e) {
            // a connection already gone: its threads will find out
        }
        threadUp();
        try {
            spawner.start("chat-writer-" + n, c.new Writer());
        } catch (RuntimeException | Error e) {
            threadDown();
            acceptErrors.increment();
            live.remove(c);
            c.closeSocket();
            return;
        }
        threadUp();
        try {
            spawner.start("chat-reader-" + n, c.new Reader());
        } catch (RuntimeException | Error e) {
            threadDown();
            acceptErrors.increment();
            c.closeSocket();
            c.queue.offer(POISON);
        }
    }

    /** One user's connection: its socket, its outbound queue, its two threads. */
    private final class Conn {
        final Socket socket;
        final LinkedBlockingQueue<byte[]> queue = new LinkedBlockingQueue<>();

        Conn(Socket socket) {
            this.socket = socket;
        }

        void closeSocket() {
            try {
                socket.close();
            } catch (IOException e) {
                // closed anyway
            }
        }

        /** Reads frames; broadcasts chat messages; on EOF, BYE or a bad frame ends both threads. */
        final class Reader implements Runnable {
            @Override
            public void run() {
                Room room = null;
                FrameReader in = null;
                long counted = 0;
                try {
                    in = new FrameReader(socket.getInputStream(), MAX_FRAME);
                    while (true) {
                        int n = in.next();
                        long now = in.consumed();
                        bytesIn.add(now - counted);
                        counted = now;
                        if (n < 0) {
                            break;
                        }
                        byte[] b = in.frame();
                        if (FrameReader.startsWith(b, n, "MSG ")) {
                            if (room == null || !FrameReader.regionEquals(b, n, 4, room.nameBytes)
                                    || n == 4 + room.nameBytes.length
                                    || b[4 + room.nameBytes.length] != ' ') {
                                malformed.increment();
                                closeSocket();
                                break;
                            }
                            byte[] frame = Arrays.copyOf(b, n + 1);
                            frame[n] = '\n';
                            messagesIn.increment();
                            room.broadcast(frame);
                        } else if (n == 3 && FrameReader.startsWith(b, n, "BYE")) {
                            break;
                        } else if (room == null && FrameReader.startsWith(b, n, "JOIN ")) {
                            String name = roomOf(new String(b, 0, n, StandardCharsets.UTF_8));
                            if (name == null) {
                                malformed.increment();
                                closeSocket();
                                break;
                            }
                            room = join(Conn.this, name);
                        } else {
                            malformed.increment();
                            closeSocket();
                            break;
                        }
                    }
                } catch (FrameReader.FrameTooLongException e) {
                    malformed.increment();
                    closeSocket();
                } catch (IOException e) {
                    // the peer reset the connection, or the server is closing
                } finally {
                    if (in != null) {
                        bytesIn.add(in.consumed() - counted);
                    }
                    if (room != null) {
                        leave(Conn.this, room);
                    }
                    queue.offer(POISON);
                    threadDown();
                }
            }
        }

        /** Drains the queue to the socket, one flush per drained batch; closes the socket at the end. */
        final class Writer implements Runnable {
            @Override
            public void run() {
                try {
                    OutputStream out = new BufferedOutputStream(socket.getOutputStream(), 16384);
                    boolean done = false;
                    while (!done) {
                        byte[] f = queue.take();
                        long frames = 0;
                        long bytes = 0;
                        while (f != null) {
                            if (f == POISON) {
                                done = true;
                                break;
                            }
                            out.write(f);
                            frames++;
                            bytes += f.length;
                            f = queue.poll();
                        }
                        out.flush();
                        framesOut.add(frames);
                        bytesOut.add(bytes);
                    }
                } catch (IOException e) {
                    // the peer went away
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    closeSocket();
                    live.remove(Conn.this);
                    threadDown();
                }
            }
        }
    }

    /** The room of a {@code JOIN <room> <user>} line, or null if the line is not one. */
    static String roomOf(String line) {
        String[] parts = line.split(" ", -1);
        if (parts.length != 3 || !parts[0].equals("JOIN") || !validName(parts[1])
                || !validName(parts[2])) {
            return null;
        }
        return parts[1];
    }

    private static boolean validName(String s) {
        if (s.isEmpty() || s.getBytes(StandardCharsets.UTF_8).length > MAX_NAME) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            if (Character.isISOControl(s.charAt(i)) || Character.isWhitespace(s.charAt(i))) {
                return false;
            }
        }
        return true;
    }
}
