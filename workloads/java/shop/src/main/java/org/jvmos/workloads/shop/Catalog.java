package org.jvmos.workloads.shop;

import java.math.BigDecimal;

/** The shop's objects, as the persistence layer maps them from rows. */
final class Catalog {

    private Catalog() {
    }

    record Category(String id, String name, String description) {
    }

    record Product(String id, String categoryId, String name, String description) {
    }

    record Item(String id, String productId, BigDecimal listPrice, String attribute,
                int inventory) {
    }

    record Account(String username, String password, String firstName, String lastName,
                   String email) {
    }

    record LineItem(String itemId, int quantity, BigDecimal unitPrice) {
    }

    record Order(long id, String username, BigDecimal total, int lines) {
    }
}
