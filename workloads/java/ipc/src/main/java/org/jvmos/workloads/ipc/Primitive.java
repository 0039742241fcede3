package org.jvmos.workloads.ipc;

import org.jvmos.workloads.Cli;

/** The communication primitives between the two JVMs. */
enum Primitive {
    /** java.net sockets carrying Request/Reply objects through ObjectOutputStream/ObjectInputStream. */
    SOCKETS("sockets"),
    /** Apache XML-RPC 3.1.3: its embedded WebServer, and XmlRpcClient with its default HTTP transport. */
    XMLRPC("xmlrpc"),
    /**
     * java.net sockets carrying text lines: DataOutputStream.writeChars and DataInputStream.readLine,
     * unbuffered, as seed 000's section 5.3 describes its socket benchmarks.
     */
    SOCKETS_TEXT("sockets-text");

    final String label;

    Primitive(String label) {
        this.label = label;
    }

    /** A socket primitive (sockets or sockets-text): the stream options apply. */
    boolean socket() {
        return this != XMLRPC;
    }

    static String labels() {
        StringBuilder sb = new StringBuilder();
        for (Primitive p : values()) {
            if (sb.length() > 0) {
                sb.append(", ");
            }
            sb.append(p.label);
        }
        return sb.toString();
    }

    static Primitive parse(String label) throws Cli.UsageException {
        for (Primitive p : values()) {
            if (p.label.equals(label)) {
                return p;
            }
        }
        throw new Cli.UsageException("--primitive must be one of " + labels() + ", got '" + label + "'");
    }
}
