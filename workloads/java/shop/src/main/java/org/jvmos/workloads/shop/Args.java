package org.jvmos.workloads.shop;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** {@code --name value} options and {@code --flag} flags; any problem is a {@link Usage}. */
final class Args {

    static final int EXIT_USAGE = 2;

    static final class Usage extends Exception {
        private static final long serialVersionUID = 1L;

        Usage(String message) {
            super(message);
        }
    }

    private final Map<String, String> values = new HashMap<>();
    private final Set<String> flags = new HashSet<>();

    static Args parse(String[] args, List<String> valueOptions, List<String> flagOptions)
            throws Usage {
        Args a = new Args();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--") || arg.length() == 2) {
                throw new Usage("unexpected argument '" + arg + "'");
            }
            String name = arg.substring(2);
            if (valueOptions.contains(name)) {
                if (i + 1 >= args.length) {
                    throw new Usage("option --" + name + " needs a value");
                }
                a.values.put(name, args[++i]);
            } else if (flagOptions.contains(name)) {
                a.flags.add(name);
            } else {
                throw new Usage("unknown option --" + name);
            }
        }
        return a;
    }

    boolean flag(String name) {
        return flags.contains(name);
    }

    String string(String name, String def) throws Usage {
        String v = values.get(name);
        if (v == null && def == null) {
            throw new Usage("missing required option --" + name);
        }
        return v == null ? def : v;
    }

    long number(String name, long def, long min, long max) throws Usage {
        String v = values.get(name);
        if (v == null) {
            return def;
        }
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new Usage("bad number for --" + name + ": '" + v + "'");
        }
        if (n < min || n > max) {
            throw new Usage("--" + name + " must be in [" + min + ", " + max + "], got " + n);
        }
        return n;
    }
}
