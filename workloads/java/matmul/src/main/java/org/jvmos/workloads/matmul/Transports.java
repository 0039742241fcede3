package org.jvmos.workloads.matmul;

import java.util.List;

/** The mechanisms by name. */
final class Transports {
    static final List<String> NAMES =
            List.of("rmi-serializable", "rmi-externalizable", "socket", "datagram");

    private Transports() {
    }

    /** A new, unopened transport; {@code dropEvery} is the datagram test option (0 = off). */
    static Transport create(String mechanism, int dropEvery) {
        switch (mechanism) {
            case "rmi-serializable":
                return new RmiSerializableTransport();
            case "rmi-externalizable":
                return new RmiExternalizableTransport();
            case "socket":
                return new SocketTransport();
            case "datagram":
                return new DatagramTransport(dropEvery);
            default:
                throw new IllegalArgumentException("unknown mechanism " + mechanism);
        }
    }
}
