package org.jvmos.workloads.matmul;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Datagram sockets with stop-and-wait: a message is encoded as its header and ints, cut into
 * packets of at most 65,507 bytes (the largest UDP payload; 17 of them are the packet header),
 * and each packet is sent alone and sent again every {@link #RETRANSMIT_MS} ms until its
 * acknowledgement arrives, at most {@link #MAX_TRIES} times, then the send fails. Packets
 * carry a per-(sender, receiver) sequence number; the receiver acknowledges every data packet,
 * drops the duplicates and puts a message in the mailbox once its last packet is in. One thread
 * per node receives both data packets and acknowledgements.
 *
 * <p>Test option {@code dropEvery} (N &gt; 1): every Nth data packet this node transmits is
 * counted but not sent, as if the network had lost it.
 */
final class DatagramTransport implements Transport {
    /** Largest UDP payload over IPv4. */
    static final int MAX_PACKET = 65_507;
    /** type (1 byte), sender, sequence number, packet index, packet count (4 ints). */
    static final int PACKET_HEADER = 17;
    static final int MAX_CHUNK = MAX_PACKET - PACKET_HEADER;
    static final int RETRANSMIT_MS = 40;
    static final int MAX_TRIES = 250;
    private static final byte DATA = 1;
    private static final byte ACK = 2;

    private final int dropEvery;
    private DatagramSocket socket;
    private Mailbox mailbox;
    private int self;
    private int[] ports;
    private int[] nextSeq;           // sender side, per receiver
    private int[] expectedSeq;       // receiver side, per sender
    private ByteArrayOutputStream[] assembly;
    private long[] acked;            // highest acknowledged sequence number + 1, per receiver
    private final ReentrantLock ackLock = new ReentrantLock();
    private final Condition ackArrived = ackLock.newCondition();
    private long transmitted;
    private volatile long retransmissions;
    private volatile long duplicates;
    private volatile boolean closed;

    DatagramTransport(int dropEvery) {
        this.dropEvery = dropEvery;
    }

    @Override
    public String mechanism() {
        return "datagram";
    }

    @Override
    public int open(int self, int nodes, int managerPort, Mailbox mailbox) throws IOException {
        this.self = self;
        this.mailbox = mailbox;
        ports = new int[nodes];
        ports[0] = managerPort;
        nextSeq = new int[nodes];
        expectedSeq = new int[nodes];
        assembly = new ByteArrayOutputStream[nodes];
        acked = new long[nodes];
        socket = new DatagramSocket(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        socket.setReceiveBufferSize(4 * 1024 * 1024);
        socket.setSendBufferSize(1024 * 1024);
        Thread t = new Thread(this::receiveLoop, "matmul-datagram-receiver");
        t.setDaemon(true);
        t.start();
        return socket.getLocalPort();
    }

    @Override
    public void peers(int[] all) {
        System.arraycopy(all, 0, ports, 0, Math.min(all.length, ports.length));
    }

    @Override
    public long retransmissions() {
        return retransmissions;
    }

    @Override
    public void send(int to, Message m) throws IOException {
        if (ports[to] == 0) {
            throw new IOException("no port known for node " + to);
        }
        InetSocketAddress dest = new InetSocketAddress(InetAddress.getLoopbackAddress(), ports[to]);
        ByteBuffer body = ByteBuffer.allocate(Message.HEADER_BYTES + 4 * m.data.length);
        body.putInt(m.kind).putInt(m.from).putInt(m.step).putInt(m.rows).putInt(m.cols)
                .putInt(m.data.length);
        body.asIntBuffer().put(m.data);
        byte[] bytes = body.array();
        int count = Math.max(1, (bytes.length + MAX_CHUNK - 1) / MAX_CHUNK);
        for (int index = 0; index < count; index++) {
            int offset = index * MAX_CHUNK;
            int length = Math.min(MAX_CHUNK, bytes.length - offset);
            // the packet is as large as its data, not always the maximum
            ByteBuffer p = ByteBuffer.allocate(PACKET_HEADER + length);
            int seq = nextSeq[to]++;
            p.put(DATA).putInt(self).putInt(seq).putInt(index).putInt(count).put(bytes, offset, length);
            sendAndAwaitAck(to, seq, new DatagramPacket(p.array(), p.capacity(), dest));
        }
    }

    private void sendAndAwaitAck(int to, int seq, DatagramPacket packet) throws IOException {
        for (int attempt = 0; attempt < MAX_TRIES; attempt++) {
            if (attempt > 0) {
                retransmissions++;
            }
            transmitted++;
            if (dropEvery <= 0 || transmitted % dropEvery != 0) {
                socket.send(packet);
            }
            if (awaitAck(to, seq, RETRANSMIT_MS)) {
                return;
            }
            if (closed) {
                throw new IOException("datagram socket closed");
            }
        }
        throw new IOException("no acknowledgement from node " + to + " for packet " + seq + " after "
                + MAX_TRIES + " tries, " + RETRANSMIT_MS + " ms apart");
    }

    private boolean awaitAck(int to, int seq, long millis) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        ackLock.lock();
        try {
            while (acked[to] <= seq) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                ackArrived.await(left, TimeUnit.NANOSECONDS);
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted waiting for an acknowledgement");
        } finally {
            ackLock.unlock();
        }
    }

    private void receiveLoop() {
        byte[] buf = new byte[MAX_PACKET];
        DatagramPacket packet = new DatagramPacket(buf, buf.length);
        while (!closed) {
            try {
                packet.setLength(buf.length);
                socket.receive(packet);
                handle(packet);
            } catch (SocketException e) {
                if (!closed) {
                    mailbox.fail(new IOException("datagram receive failed: " + e.getMessage(), e));
                }
                return;
            } catch (IOException e) {
                mailbox.fail(new IOException("datagram receive failed: " + e.getMessage(), e));
                return;
            }
        }
    }

    private void handle(DatagramPacket packet) throws IOException {
        if (packet.getLength() < PACKET_HEADER) {
            return; // not ours
        }
        ByteBuffer p = ByteBuffer.wrap(packet.getData(), 0, packet.getLength());
        byte type = p.get();
        int from = p.getInt();
        int seq = p.getInt();
        int index = p.getInt();
        int count = p.getInt();
        if (from < 0 || from >= ports.length) {
            return;
        }
        if (type == ACK) {
            ackLock.lock();
            try {
                if (seq + 1L > acked[from]) {
                    acked[from] = seq + 1L;
                }
                ackArrived.signalAll();
            } finally {
                ackLock.unlock();
            }
            return;
        }
        if (type != DATA) {
            return;
        }
        if (seq > expectedSeq[from]) {
            return; // cannot happen with stop-and-wait; not acknowledged
        }
        ByteBuffer ack = ByteBuffer.allocate(PACKET_HEADER);
        ack.put(ACK).putInt(self).putInt(seq).putInt(0).putInt(1);
        socket.send(new DatagramPacket(ack.array(), PACKET_HEADER, packet.getSocketAddress()));
        if (seq < expectedSeq[from]) {
            duplicates++;
            return;
        }
        expectedSeq[from]++;
        if (assembly[from] == null) {
            assembly[from] = new ByteArrayOutputStream();
        }
        assembly[from].write(packet.getData(), PACKET_HEADER, packet.getLength() - PACKET_HEADER);
        if (index == count - 1) {
            byte[] bytes = assembly[from].toByteArray();
            assembly[from] = null;
            mailbox.put(decode(bytes));
        }
    }

    private static Message decode(byte[] bytes) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        if (bytes.length < Message.HEADER_BYTES) {
            throw new IOException("short message of " + bytes.length + " bytes");
        }
        int kind = b.getInt();
        int from = b.getInt();
        int step = b.getInt();
        int rows = b.getInt();
        int cols = b.getInt();
        int length = b.getInt();
        if (length < 0 || 4L * length != bytes.length - Message.HEADER_BYTES) {
            throw new IOException("bad message length " + length);
        }
        int[] data = new int[length];
        b.asIntBuffer().get(data);
        return new Message(kind, from, step, rows, cols, data);
    }

    @Override
    public void close() {
        closed = true;
        if (socket != null) {
            socket.close();
        }
    }
}
