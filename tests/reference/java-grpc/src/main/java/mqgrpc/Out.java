package mqgrpc;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The only writer of stdout: one JSON object per line, flushed, from one synchronized method (as mqref.Out).
 * System.out is pointed at stderr so stray library prints cannot corrupt the event stream; after
 * {@link #finish} nothing more is printed.
 */
final class Out {
    private static PrintStream out;
    private static boolean closed;

    private Out() {
    }

    /** Takes the real stdout for events and redirects System.out to stderr. Call first in main. */
    static synchronized void init() {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
    }

    /** A new event with "event" and "t" (epoch ms) filled in, then the alternating keys and values. */
    static Map<String, Object> event(String name, Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", name);
        m.put("t", System.currentTimeMillis());
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put(String.valueOf(kv[i]), kv[i + 1]);
        }
        return m;
    }

    static void emit(String name, Object... kv) {
        emit(event(name, kv));
    }

    static synchronized void emit(Map<String, Object> m) {
        if (!closed && out != null) {
            out.println(Json.write(m));
            out.flush();
        }
    }

    /** Prints the final event; later events are dropped. */
    static synchronized void finish(Map<String, Object> m) {
        emit(m);
        closed = true;
    }

    /** "class: message" of e and of each cause. */
    static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder();
        Set<Throwable> seen = new HashSet<>();
        for (Throwable t = e; t != null && seen.add(t) && seen.size() <= 5; t = t.getCause()) {
            if (sb.length() > 0) {
                sb.append(" <- caused by ");
            }
            sb.append(t.getClass().getName()).append(": ").append(t.getMessage());
        }
        return sb.toString();
    }
}
