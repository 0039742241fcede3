package org.jvmos.workloads.ipc;

import org.jvmos.workloads.Cli.Json;
import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.thoughtworks.xstream.XStream;
import org.jvmos.workloads.Cli;
import org.jvmos.workloads.Workload;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedList;
import java.util.List;
import java.util.Random;
import java.util.Vector;

/**
 * Seed 002's serialization primitives, in one JVM: each iteration serializes an object graph to
 * bytes and deserializes it back, timed apart with {@code System.nanoTime}; every round trip is
 * checked with {@code equals}. Prints one JSON line with the bytes per object and the mean (and
 * standard deviation of the) nanoseconds per serialization and per deserialization over the
 * iterations after the warm-up.
 *
 * <pre>SerialBench --format serializable|externalizable|xstream|kryo --graph vector|linkedlist|nested
 *             [--size 500] [--iterations 1000] [--warmup 100] [--seed 1] [--max-seconds 300]</pre>
 *
 * <ul>
 *   <li>serializable: ObjectOutputStream/ObjectInputStream on byte arrays, new streams each
 *       iteration (one message each), default serialization of the graph's classes;</li>
 *   <li>externalizable: the same streams; the root writes and reads its content by hand
 *       ({@link Graphs.ExtInts}, {@link Graphs.ExtOrder});</li>
 *   <li>xstream: XStream's default XML (class names as element names), the graph's classes
 *       allowed by its security framework; one XStream for the run;</li>
 *   <li>kryo: Kryo 5 with its default registration-required mode (every class registered), one
 *       Kryo and one Output for the run, writeClassAndObject/readClassAndObject.</li>
 * </ul>
 */
public final class SerialBench extends Workload {

    static final List<String> FORMATS = List.of("serializable", "externalizable", "xstream", "kryo");
    static final List<String> GRAPHS = List.of("vector", "linkedlist", "nested");
    static final int MAX_SIZE = 5_000_000;

    SerialBench() {
        super(List.of("format", "graph", "size", "iterations", "warmup", "seed", "max-seconds"), List.of());
    }

    public static void main(String[] args) {
        new SerialBench().runAndExitOnFailure(args);
    }

    /** One serialization primitive. */
    abstract static class Codec {
        abstract byte[] write(Object o) throws Exception;

        abstract Object read(byte[] bytes) throws Exception;

        /** The object this format round-trips for the graph (its Externalizable form, or itself). */
        Object subject(Object graph) {
            return graph;
        }
    }

    static class JavaSerialization extends Codec {
        @Override
        byte[] write(Object o) throws IOException {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
            try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
                out.writeObject(o);
            }
            return bytes.toByteArray();
        }

        @Override
        Object read(byte[] bytes) throws IOException, ClassNotFoundException {
            try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
                return in.readObject();
            }
        }
    }

    static final class Externalization extends JavaSerialization {
        @Override
        @SuppressWarnings("unchecked")
        Object subject(Object graph) {
            if (graph instanceof Graphs.Order) {
                return new Graphs.ExtOrder((Graphs.Order) graph);
            }
            return new Graphs.ExtInts((List<Integer>) graph);
        }
    }

    static final class XStreamXml extends Codec {
        private final XStream xstream = new XStream();

        XStreamXml() {
            xstream.allowTypes(new Class<?>[] {Graphs.Order.class, Graphs.Customer.class,
                Graphs.Address.class, Graphs.OrderLine.class});
        }

        @Override
        byte[] write(Object o) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream(1024);
            xstream.toXML(o, bytes);
            return bytes.toByteArray();
        }

        @Override
        Object read(byte[] bytes) {
            return xstream.fromXML(new ByteArrayInputStream(bytes));
        }
    }

    static final class KryoBinary extends Codec {
        private final Kryo kryo = new Kryo();
        private final Output output = new Output(4096, -1);

        KryoBinary() {
            kryo.register(Vector.class);
            kryo.register(LinkedList.class);
            kryo.register(ArrayList.class);
            kryo.register(Graphs.Order.class);
            kryo.register(Graphs.Customer.class);
            kryo.register(Graphs.Address.class);
            kryo.register(Graphs.OrderLine.class);
        }

        @Override
        byte[] write(Object o) {
            output.reset();
            kryo.writeClassAndObject(output, o);
            return output.toBytes();
        }

        @Override
        Object read(byte[] bytes) {
            return kryo.readClassAndObject(new Input(bytes));
        }
    }

    static Codec codec(String format) throws Cli.UsageException {
        switch (format) {
            case "serializable":
                return new JavaSerialization();
            case "externalizable":
                return new Externalization();
            case "xstream":
                return new XStreamXml();
            case "kryo":
                return new KryoBinary();
            default:
                throw new Cli.UsageException("--format must be one of " + String.join(", ", FORMATS)
                        + ", got '" + format + "'");
        }
    }

    static Object graph(String graph, int size, Random rnd) throws Cli.UsageException {
        switch (graph) {
            case "vector":
                return Graphs.ints(false, size, rnd);
            case "linkedlist":
                return Graphs.ints(true, size, rnd);
            case "nested":
                return Graphs.order(size, rnd);
            default:
                throw new Cli.UsageException("--graph must be one of " + String.join(", ", GRAPHS)
                        + ", got '" + graph + "'");
        }
    }

    static String library(String format) {
        switch (format) {
            case "xstream":
                return "xstream " + Versions.of("xstream");
            case "kryo":
                return "kryo " + Versions.of("kryo");
            default:
                return "java " + System.getProperty("java.version");
        }
    }

    @Override
    protected int run(Cli cli, PrintStream out, PrintStream err) throws Cli.UsageException {
        String format = cli.string("format", null);
        String graphName = cli.string("graph", null);
        int size = cli.intValue("size", 500, 0, MAX_SIZE);
        int iterations = cli.intValue("iterations", 1000, 1, 100_000_000);
        int warmup = cli.intValue("warmup", 100, 0, 100_000_000);
        long seed = cli.longValue("seed", 1, Long.MIN_VALUE, Long.MAX_VALUE);
        long maxSeconds = cli.longValue("max-seconds", 300, 1, 86_400);
        Codec codec = codec(format);
        Object subject = codec.subject(graph(graphName, size, new Random(seed)));

        long deadline = System.nanoTime() + maxSeconds * 1_000_000_000L;
        Welford ser = new Welford();
        Welford de = new Welford();
        long bytesMin = Long.MAX_VALUE;
        long bytesMax = 0;
        int total = warmup + iterations;
        for (int i = 0; i < total; i++) {
            if (System.nanoTime() - deadline > 0) {
                err.println("error: --max-seconds " + maxSeconds + " reached after " + i + " of " + total
                        + " round trips (" + format + ", " + graphName + ", size " + size + ")");
                return 1;
            }
            byte[] bytes;
            Object back;
            long t0 = System.nanoTime();
            long t1;
            long t2;
            try {
                bytes = codec.write(subject);
                t1 = System.nanoTime();
                back = codec.read(bytes);
                t2 = System.nanoTime();
            } catch (Exception | StackOverflowError e) {
                err.println("error: round trip " + (i + 1) + " of " + total + " (" + format + ", " + graphName
                        + ", size " + size + ") failed: " + String.valueOf(e).replace('\n', ' '));
                return 1;
            }
            if (back == null || back.getClass() != subject.getClass() || !subject.equals(back)) {
                err.println("error: round trip " + (i + 1) + " of " + total + " (" + format + ", " + graphName
                        + ", size " + size + ") gave back a different "
                        + (back == null ? "null" : back.getClass().getSimpleName()));
                return 1;
            }
            bytesMin = Math.min(bytesMin, bytes.length);
            bytesMax = Math.max(bytesMax, bytes.length);
            if (i >= warmup) {
                ser.add(t1 - t0);
                de.add(t2 - t1);
            }
        }
        out.println(new Json().put("workload", "serial-bench").put("format", format).put("graph", graphName)
                .put("size", size).put("iterations", iterations).put("warmup", warmup).put("validated", total)
                .put("bytes_per_object", bytesMax).put("bytes_min", bytesMin)
                .put("ns_per_serialize", ser.mean, 1).put("ns_per_deserialize", de.mean, 1)
                .put("sd_serialize_ns", ser.sd(), 1).put("sd_deserialize_ns", de.sd(), 1)
                .put("ns_per_round_trip", ser.mean + de.mean, 1).put("seed", seed)
                .put("library", library(format)).put("java_version", System.getProperty("java.version")));
        out.flush();
        return 0;
    }

    /** Running mean and sample standard deviation (Welford). */
    private static final class Welford {
        long n;
        double mean;
        double m2;

        void add(double x) {
            n++;
            double d = x - mean;
            mean += d / n;
            m2 += d * (x - mean);
        }

        double sd() {
            return n < 2 ? 0 : Math.sqrt(m2 / (n - 1));
        }
    }
}
