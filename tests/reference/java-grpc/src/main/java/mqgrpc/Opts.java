package mqgrpc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** "--key value" options (or "--key=value"); lists are comma-separated. */
final class Opts {
    private final Map<String, String> values = new HashMap<>();

    Opts(String[] args, int from) {
        for (int i = from; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--") || a.length() < 3) {
                throw new IllegalArgumentException("unexpected argument: " + a);
            }
            String key = a.substring(2);
            int eq = key.indexOf('=');
            if (eq > 0) {
                values.put(key.substring(0, eq), key.substring(eq + 1));
            } else if (i + 1 < args.length) {
                values.put(key, args[++i]);
            } else {
                throw new IllegalArgumentException("option --" + key + " needs a value");
            }
        }
    }

    String str(String key, String dflt) {
        return values.getOrDefault(key, dflt);
    }

    String required(String key) {
        String v = values.get(key);
        if (v == null || v.isEmpty()) {
            throw new IllegalArgumentException("option --" + key + " is required");
        }
        return v;
    }

    int integer(String key, int dflt) {
        String v = values.get(key);
        return v == null ? dflt : Integer.parseInt(v.trim());
    }

    long lng(String key, long dflt) {
        String v = values.get(key);
        return v == null ? dflt : Long.parseLong(v.trim());
    }

    Duration millis(String key, long dflt) {
        return Duration.ofMillis(lng(key, dflt));
    }

    /** The comma-separated items of --key; empty when absent. */
    List<String> list(String key) {
        String v = values.get(key);
        List<String> out = new ArrayList<>();
        if (v != null && !v.isEmpty()) {
            out.addAll(List.of(v.split(",", -1)));
        }
        return out;
    }

    /** "k=v,k2=v2" as an ordered map (empty when absent). */
    Map<String, String> props(String key) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String pair : list(key)) {
            int eq = pair.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("bad --" + key + " entry: " + pair);
            }
            m.put(pair.substring(0, eq), pair.substring(eq + 1));
        }
        return m;
    }
}
