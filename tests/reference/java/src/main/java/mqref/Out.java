package mqref;

import com.alibaba.fastjson.JSON;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The only writer of stdout: one JSON object per line, flushed, from one synchronized method.
 * System.out itself is pointed at stderr so stray library prints cannot corrupt the event stream.
 * After {@link #finish} nothing more is printed.
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

    /** A new event map with "event" and "t" filled in; add fields and pass it to {@link #emit}. */
    static Map<String, Object> event(String name) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", name);
        m.put("t", System.currentTimeMillis());
        return m;
    }

    /** Builds an event from alternating key/value pairs and prints it. */
    static void emit(String name, Object... kv) {
        Map<String, Object> m = event(name);
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put(String.valueOf(kv[i]), kv[i + 1]);
        }
        emit(m);
    }

    static synchronized void emit(Map<String, Object> m) {
        if (closed || out == null) {
            return;
        }
        out.println(JSON.toJSONString(m));
        out.flush();
    }

    /** Prints the final event; later events are dropped. */
    static synchronized void finish(Map<String, Object> m) {
        emit(m);
        closed = true;
    }

    /** "class: message" of e and of each cause, without the client's trailing FAQ pointer. */
    static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder();
        java.util.Set<Throwable> seen = new java.util.HashSet<>();
        for (Throwable t = e; t != null && seen.add(t) && seen.size() <= 5; t = t.getCause()) {
            if (sb.length() > 0) {
                sb.append(" <- caused by ");
            }
            sb.append(t.getClass().getName()).append(": ").append(clean(t.getMessage()));
        }
        return sb.toString();
    }

    private static String clean(String msg) {
        if (msg == null) {
            return "null";
        }
        String m = msg;
        for (String tail : new String[] {"\nFor more information", "\nSee http"}) {
            int cut = m.indexOf(tail);
            if (cut >= 0) {
                m = m.substring(0, cut);
            }
        }
        return m.trim();
    }

    /** Prints the fatal error event and exits 1. */
    static void fatal(Throwable e) {
        Map<String, Object> m = event("error");
        m.put("error", describe(e));
        finish(m);
        System.err.println("mqref fatal error:");
        e.printStackTrace(System.err);
        System.err.flush();
        Main.exit(1);
    }
}
