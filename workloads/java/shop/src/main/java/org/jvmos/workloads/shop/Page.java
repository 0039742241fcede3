package org.jvmos.workloads.shop;

import java.nio.charset.StandardCharsets;

/**
 * One HTML page. JPetStore's pages are a few kB; the paper enlarged them to match real sites,
 * and so does this: {@link #render(int)} pads the page with a deterministic "you may also like"
 * block until it is at least the requested size, so that page size is a parameter.
 */
final class Page {

    private static final String FILLER_LINE =
            "<li class=\"rec\">Customers who bought this also looked at our pet supplies, "
                    + "aquariums, leashes, cages and food - see the catalog.</li>\n";

    private final StringBuilder body = new StringBuilder(4096);
    private final String title;

    Page(String title) {
        this.title = title;
    }

    Page add(String html) {
        body.append(html).append('\n');
        return this;
    }

    Page text(String tag, String text) {
        body.append('<').append(tag).append('>').append(escape(text)).append("</").append(tag)
                .append(">\n");
        return this;
    }

    byte[] render(int minBytes) {
        StringBuilder sb = new StringBuilder(Math.max(minBytes + 256, 4096));
        sb.append("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>JPetStore - ")
                .append(escape(title)).append("</title></head>\n<body>\n")
                .append("<div id=\"menu\"><a href=\"/\">Catalog</a> <a href=\"/cart\">Cart</a> "
                        + "<a href=\"/orders\">Orders</a></div>\n")
                .append(body);
        String tail = "</body></html>\n";
        int have = sb.length() + tail.length();
        if (have < minBytes) {
            sb.append("<ul id=\"recommendations\">\n");
            have += "<ul id=\"recommendations\">\n</ul>\n".length();
            int n = 0;
            while (have < minBytes) {
                String line = FILLER_LINE;
                if (have + line.length() > minBytes) {
                    line = "<!--" + "-".repeat(Math.max(0, minBytes - have - 7)) + "-->";
                }
                sb.append(line);
                have += line.length();
                n++;
            }
            sb.append("</ul>\n");
        }
        sb.append(tail);
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    static String escape(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 8);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '<' -> sb.append("&lt;");
                case '>' -> sb.append("&gt;");
                case '&' -> sb.append("&amp;");
                case '"' -> sb.append("&quot;");
                default -> sb.append(c);
            }
        }
        return sb.toString();
    }
}
