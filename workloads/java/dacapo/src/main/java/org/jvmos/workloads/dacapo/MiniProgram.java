package org.jvmos.workloads.dacapo;

import java.util.Random;

/** A seeded random program in the Mini language of Mini.g4, with the statement counts a parse must find. */
final class MiniProgram {
    private static final String[] BINARY = {"+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||",
        "^"};

    private final Random random;
    private final StringBuilder text = new StringBuilder();
    int functions;
    int statements;

    private MiniProgram(Random random) {
        this.random = random;
    }

    static MiniProgram generate(long seed, int functionCount) {
        MiniProgram p = new MiniProgram(new Random(seed));
        for (int f = 0; f < functionCount; f++) {
            p.text.append("// function ").append(f).append('\n');
            p.text.append("def f").append(f).append("(a, b").append(f % 3 == 0 ? ", c" : "").append(") ");
            p.block(0);
            p.text.append('\n');
            p.functions++;
            if (f % 4 == 0) {
                p.statement(0);
            }
        }
        return p;
    }

    String text() {
        return text.toString();
    }

    private void block(int depth) {
        text.append("{\n");
        int n = 1 + random.nextInt(depth == 0 ? 8 : 4);
        for (int i = 0; i < n; i++) {
            indent(depth + 1);
            statement(depth + 1);
        }
        indent(depth);
        text.append("}");
    }

    private void statement(int depth) {
        statements++;
        int kind = random.nextInt(depth < 3 ? 10 : 6);
        switch (kind) {
            case 0:
                text.append("let ").append(name()).append(" = ");
                expr(0);
                text.append(";\n");
                break;
            case 1:
                text.append(name()).append(" = ");
                expr(0);
                text.append(";\n");
                break;
            case 2:
                text.append(name()).append('[');
                expr(2);
                text.append("] = ");
                expr(1);
                text.append(";\n");
                break;
            case 3:
                text.append("print(");
                args(1);
                text.append(");\n");
                break;
            case 4:
                text.append("return ");
                expr(0);
                text.append(";\n");
                break;
            case 5:
                expr(1);
                text.append(";\n");
                break;
            case 6:
            case 7:
                text.append("if (");
                expr(1);
                text.append(") ");
                block(depth);
                if (random.nextBoolean()) {
                    text.append(" else ");
                    block(depth);
                }
                text.append('\n');
                break;
            case 8:
                text.append("while (");
                expr(1);
                text.append(") ");
                block(depth);
                text.append('\n');
                break;
            default:
                text.append("for ").append(name()).append(" in ");
                expr(2);
                text.append(' ');
                block(depth);
                text.append('\n');
        }
    }

    private void expr(int depth) {
        int kind = depth >= 4 ? 10 + random.nextInt(4) : random.nextInt(14);
        switch (kind) {
            case 0:
            case 1:
            case 2:
            case 3:
                expr(depth + 1);
                text.append(' ').append(BINARY[random.nextInt(BINARY.length)]).append(' ');
                expr(depth + 1);
                break;
            case 4:
                text.append('f').append(random.nextInt(50)).append('(');
                args(depth + 1);
                text.append(')');
                break;
            case 5:
                text.append(name()).append('[');
                expr(depth + 1);
                text.append(']');
                break;
            case 6:
                text.append(random.nextBoolean() ? "-" : "!");
                expr(depth + 1);
                break;
            case 7:
                expr(depth + 1);
                text.append(" ? ");
                expr(depth + 1);
                text.append(" : ");
                expr(depth + 1);
                break;
            case 8:
                text.append('(');
                expr(depth + 1);
                text.append(')');
                break;
            case 9:
                text.append('[');
                args(depth + 1);
                text.append(']');
                break;
            case 10:
                text.append(name()).append('.').append(name());
                break;
            case 11:
                text.append(random.nextInt(100_000));
                break;
            case 12:
                text.append("\"s").append(random.nextInt(1000)).append(random.nextInt(5) == 0 ? "\\n" : "")
                        .append('"');
                break;
            default:
                text.append(name());
        }
    }

    private void args(int depth) {
        int n = random.nextInt(4);
        for (int i = 0; i < n; i++) {
            text.append(i == 0 ? "" : ", ");
            expr(depth + 1);
        }
    }

    private String name() {
        return "v" + random.nextInt(40);
    }

    private void indent(int depth) {
        for (int i = 0; i < depth; i++) {
            text.append("  ");
        }
    }
}
