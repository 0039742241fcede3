package org.jvmos.workloads.matmul;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.rmi.NoSuchObjectException;
import java.rmi.NotBoundException;
import java.rmi.Remote;
import java.rmi.registry.LocateRegistry;
import java.rmi.registry.Registry;
import java.rmi.server.RMIServerSocketFactory;
import java.rmi.server.UnicastRemoteObject;

/**
 * The RMI plumbing both RMI mechanisms share (counted for both): the registry, created by the
 * manager on a free port of 127.0.0.1; every node's mailbox object exported on 127.0.0.1 and
 * bound in it as {@code jvmos-matmul-node-<id>}; the peers' stubs looked up once.
 */
final class RmiSupport {
    static final String PREFIX = "jvmos-matmul-node-";

    /** Server sockets on 127.0.0.1 only; remembers the port of the last one. */
    static final class LoopbackServerSockets implements RMIServerSocketFactory {
        volatile int lastPort;

        @Override
        public ServerSocket createServerSocket(int port) throws IOException {
            ServerSocket s = new ServerSocket(port, 50, InetAddress.getLoopbackAddress());
            lastPort = s.getLocalPort();
            return s;
        }

        @Override
        public boolean equals(Object o) {
            return o == this;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(this);
        }
    }

    private Registry registry;
    private Registry created;
    private Remote exported;
    private Remote[] stubs;

    /** Exports {@code impl} and binds it; the manager (self 0) first creates the registry. */
    int open(int self, int nodes, int managerPort, Remote impl) throws IOException {
        // the stubs must name 127.0.0.1, whatever the host's name resolves to
        System.setProperty("java.rmi.server.hostname", "127.0.0.1");
        int port;
        if (self == 0) {
            LoopbackServerSockets registrySockets = new LoopbackServerSockets();
            created = LocateRegistry.createRegistry(0, null, registrySockets);
            registry = created;
            port = registrySockets.lastPort;
            if (port == 0) {
                throw new IOException("the RMI registry did not report its port");
            }
        } else {
            registry = LocateRegistry.getRegistry("127.0.0.1", managerPort);
            port = managerPort;
        }
        exported = impl;
        Remote stub = UnicastRemoteObject.exportObject(impl, 0, null, new LoopbackServerSockets());
        registry.rebind(PREFIX + self, stub);
        stubs = new Remote[nodes];
        return port;
    }

    /** The stub of node {@code node}'s mailbox (looked up once). */
    Remote stub(int node) throws IOException {
        if (stubs[node] == null) {
            try {
                stubs[node] = registry.lookup(PREFIX + node);
            } catch (NotBoundException e) {
                throw new IOException("node " + node + " is not bound in the RMI registry");
            }
        }
        return stubs[node];
    }

    void close() {
        if (exported != null) {
            // a call still in progress (e.g. the DONE just taken, its return not yet written) is
            // let finish, for up to 5 s, before the object goes
            try {
                for (int i = 0; i < 500 && !UnicastRemoteObject.unexportObject(exported, false); i++) {
                    Thread.sleep(10);
                }
                UnicastRemoteObject.unexportObject(exported, true);
            } catch (NoSuchObjectException e) {
                // not exported (any more)
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (created != null) {
            try {
                UnicastRemoteObject.unexportObject(created, true);
            } catch (NoSuchObjectException e) {
                // not exported
            }
        }
    }
}
