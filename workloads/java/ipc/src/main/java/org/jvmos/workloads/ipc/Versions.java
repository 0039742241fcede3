package org.jvmos.workloads.ipc;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** The library versions the build recorded in {@code jvmos-ipc.properties}. */
final class Versions {

    private static final Properties PROPS = load();

    private Versions() {
    }

    private static Properties load() {
        Properties p = new Properties();
        try (InputStream in = Versions.class.getResourceAsStream("/jvmos-ipc.properties")) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            // unknown versions
        }
        return p;
    }

    /** The version of {@code library} (xmlrpc, xstream, kryo), or null. */
    static String of(String library) {
        String v = PROPS.getProperty(library + ".version");
        return v == null || v.startsWith("${") ? null : v;
    }
}
