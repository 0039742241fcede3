package org.jvmos.workloads.ipc;

import java.io.Externalizable;
import java.io.IOException;
import java.io.ObjectInput;
import java.io.ObjectOutput;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedList;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.Vector;

/**
 * The object graphs SerialBench round-trips: a list of Integers (a {@code java.util.Vector}, the
 * type of seed 000's messages, or a {@code java.util.LinkedList}, seed 002's ADT), and a small
 * nested graph, an {@link Order} with a {@link Customer}, its {@link Address}, and
 * {@code size} {@link OrderLine}s. The Externalizable forms ({@link ExtInts}, {@link ExtOrder})
 * write the same content by hand.
 */
public final class Graphs {

    private Graphs() {
    }

    /** A Vector or LinkedList of {@code size} ints in [0, 1,000,000). */
    static List<Integer> ints(boolean linked, int size, Random rnd) {
        List<Integer> v = linked ? new LinkedList<>() : new Vector<>(size);
        for (int i = 0; i < size; i++) {
            v.add(rnd.nextInt(1_000_000));
        }
        return v;
    }

    /** An order of {@code lines} lines. */
    static Order order(int lines, Random rnd) {
        Order o = new Order();
        fill(o, lines, rnd);
        return o;
    }

    static void fill(Order o, int lines, Random rnd) {
        o.id = rnd.nextInt(1_000_000_000);
        o.status = "PLACED";
        o.placedAtMillis = 1_700_000_000_000L + rnd.nextInt(1_000_000_000);
        int c = rnd.nextInt(100_000);
        o.customer = new Customer(c, "Customer " + c, "customer" + c + "@example.org",
                new Address(rnd.nextInt(999) + 1 + " Main Street", "Springfield", String.format(java.util.Locale.ROOT, "%05d", rnd.nextInt(100_000))));
        o.lines = new ArrayList<>(lines);
        for (int i = 0; i < lines; i++) {
            o.lines.add(new OrderLine(String.format(java.util.Locale.ROOT, "SKU-%06d", rnd.nextInt(1_000_000)), 1 + rnd.nextInt(10),
                    100 + rnd.nextInt(100_000)));
        }
    }

    /** A postal address. */
    public static final class Address implements Serializable {
        private static final long serialVersionUID = 1L;
        String street;
        String city;
        String zip;

        public Address() {
        }

        Address(String street, String city, String zip) {
            this.street = street;
            this.city = city;
            this.zip = zip;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Address)) {
                return false;
            }
            Address a = (Address) o;
            return Objects.equals(street, a.street) && Objects.equals(city, a.city) && Objects.equals(zip, a.zip);
        }

        @Override
        public int hashCode() {
            return Objects.hash(street, city, zip);
        }
    }

    /** The customer of an order. */
    public static final class Customer implements Serializable {
        private static final long serialVersionUID = 1L;
        int id;
        String name;
        String email;
        Address address;

        public Customer() {
        }

        Customer(int id, String name, String email, Address address) {
            this.id = id;
            this.name = name;
            this.email = email;
            this.address = address;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Customer)) {
                return false;
            }
            Customer c = (Customer) o;
            return id == c.id && Objects.equals(name, c.name) && Objects.equals(email, c.email)
                    && Objects.equals(address, c.address);
        }

        @Override
        public int hashCode() {
            return Objects.hash(id, name, email, address);
        }
    }

    /** One line of an order. */
    public static final class OrderLine implements Serializable {
        private static final long serialVersionUID = 1L;
        String sku;
        int quantity;
        long priceCents;

        public OrderLine() {
        }

        OrderLine(String sku, int quantity, long priceCents) {
            this.sku = sku;
            this.quantity = quantity;
            this.priceCents = priceCents;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof OrderLine)) {
                return false;
            }
            OrderLine l = (OrderLine) o;
            return quantity == l.quantity && priceCents == l.priceCents && Objects.equals(sku, l.sku);
        }

        @Override
        public int hashCode() {
            return Objects.hash(sku, quantity, priceCents);
        }
    }

    /** An order: the root of the nested graph. Equal to an {@link ExtOrder} with the same content. */
    public static class Order implements Serializable {
        private static final long serialVersionUID = 1L;
        long id;
        String status;
        long placedAtMillis;
        Customer customer;
        List<OrderLine> lines;

        public Order() {
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Order)) {
                return false;
            }
            Order x = (Order) o;
            return id == x.id && placedAtMillis == x.placedAtMillis && Objects.equals(status, x.status)
                    && Objects.equals(customer, x.customer) && Objects.equals(lines, x.lines);
        }

        @Override
        public int hashCode() {
            return Objects.hash(id, status, placedAtMillis, customer, lines);
        }
    }

    /** The order written field by field by hand: no class descriptors below the root. */
    public static final class ExtOrder extends Order implements Externalizable {
        private static final long serialVersionUID = 1L;

        public ExtOrder() {
        }

        ExtOrder(Order o) {
            id = o.id;
            status = o.status;
            placedAtMillis = o.placedAtMillis;
            customer = o.customer;
            lines = o.lines;
        }

        @Override
        public void writeExternal(ObjectOutput out) throws IOException {
            out.writeLong(id);
            out.writeUTF(status);
            out.writeLong(placedAtMillis);
            out.writeInt(customer.id);
            out.writeUTF(customer.name);
            out.writeUTF(customer.email);
            out.writeUTF(customer.address.street);
            out.writeUTF(customer.address.city);
            out.writeUTF(customer.address.zip);
            out.writeInt(lines.size());
            for (OrderLine l : lines) {
                out.writeUTF(l.sku);
                out.writeInt(l.quantity);
                out.writeLong(l.priceCents);
            }
        }

        @Override
        public void readExternal(ObjectInput in) throws IOException {
            id = in.readLong();
            status = in.readUTF();
            placedAtMillis = in.readLong();
            int cid = in.readInt();
            String name = in.readUTF();
            String email = in.readUTF();
            customer = new Customer(cid, name, email, new Address(in.readUTF(), in.readUTF(), in.readUTF()));
            int n = in.readInt();
            lines = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                lines.add(new OrderLine(in.readUTF(), in.readInt(), in.readLong()));
            }
        }
    }

    /** A Vector or LinkedList of Integers written by hand: its kind, its length, its ints. */
    public static final class ExtInts implements Externalizable {
        private static final long serialVersionUID = 1L;
        List<Integer> values;

        public ExtInts() {
        }

        ExtInts(List<Integer> values) {
            this.values = values;
        }

        @Override
        public void writeExternal(ObjectOutput out) throws IOException {
            out.writeBoolean(values instanceof LinkedList);
            out.writeInt(values.size());
            for (Integer v : values) {
                out.writeInt(v);
            }
        }

        @Override
        public void readExternal(ObjectInput in) throws IOException {
            boolean linked = in.readBoolean();
            int n = in.readInt();
            values = linked ? new LinkedList<>() : new Vector<>(n);
            for (int i = 0; i < n; i++) {
                values.add(in.readInt());
            }
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof ExtInts && values.getClass() == ((ExtInts) o).values.getClass()
                    && values.equals(((ExtInts) o).values);
        }

        @Override
        public int hashCode() {
            return values.hashCode();
        }
    }
}
