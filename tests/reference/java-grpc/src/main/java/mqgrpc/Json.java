package mqgrpc;

import java.util.Collection;
import java.util.Map;
import java.util.Optional;

/** A JSON writer for the few shapes events hold (maps, collections, strings, numbers, booleans, null), so the
 * harness needs no JSON library beside the client's shaded jar. */
final class Json {
    private Json() {
    }

    static String write(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value);
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object v) {
        if (v instanceof Optional<?> o) {
            write(sb, o.orElse(null));
        } else if (v == null) {
            sb.append("null");
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Map<?, ?> m) {
            sb.append('{');
            String sep = "";
            for (Map.Entry<?, ?> e : m.entrySet()) {
                sb.append(sep);
                string(sb, String.valueOf(e.getKey()));
                sb.append(':');
                write(sb, e.getValue());
                sep = ",";
            }
            sb.append('}');
        } else if (v instanceof Collection<?> c) {
            sb.append('[');
            String sep = "";
            for (Object item : c) {
                sb.append(sep);
                write(sb, item);
                sep = ",";
            }
            sb.append(']');
        } else {
            string(sb, v.toString());
        }
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }
}
