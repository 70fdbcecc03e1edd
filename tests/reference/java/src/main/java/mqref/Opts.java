package mqref;

import java.lang.management.ManagementFactory;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.remoting.RPCHook;

/** "--key value" options and bare flags, plus the settings every client shares. */
final class Opts {
    /** Options that take no value. */
    private static final Set<String> FLAGS = Set.of("tls", "trace", "latency", "quiet", "print-props", "pop");

    private final Map<String, String> values = new HashMap<>();

    Opts(String[] args, int from) {
        for (int i = from; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--") || a.length() < 3) {
                throw new IllegalArgumentException("unexpected argument: " + a);
            }
            String key = a.substring(2);
            String val;
            int eq = key.indexOf('=');
            if (eq > 0) {
                val = key.substring(eq + 1);
                key = key.substring(0, eq);
            } else if (FLAGS.contains(key)) {
                val = "true";
            } else if (i + 1 < args.length) {
                val = args[++i];
            } else {
                throw new IllegalArgumentException("option --" + key + " needs a value");
            }
            values.put(key, val);
        }
    }

    boolean has(String key) {
        return values.containsKey(key);
    }

    boolean flag(String key) {
        return "true".equalsIgnoreCase(values.get(key));
    }

    String str(String key, String dflt) {
        String v = values.get(key);
        return v == null ? dflt : v;
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

    /** "k=v,k2=v2" as an ordered map (empty when absent). */
    Map<String, String> props(String key) {
        Map<String, String> m = new LinkedHashMap<>();
        String v = values.get(key);
        if (v == null || v.isEmpty()) {
            return m;
        }
        for (String pair : v.split(",")) {
            int eq = pair.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("bad --" + key + " entry: " + pair);
            }
            m.put(pair.substring(0, eq), pair.substring(eq + 1));
        }
        return m;
    }

    // ---- settings shared by every client ----

    String namesrv() {
        return required("namesrv");
    }

    boolean trace() {
        return flag("trace");
    }

    /** An ACL hook when --ak/--sk are given, else null. */
    RPCHook rpcHook() {
        if (!has("ak") && !has("sk")) {
            return null;
        }
        return new AclClientRPCHook(new SessionCredentials(required("ak"), required("sk")));
    }

    /** Name server, instance name and TLS on any client. */
    void apply(ClientConfig c) {
        c.setNamesrvAddr(namesrv());
        c.setInstanceName(str("instance", defaultInstance()));
        if (has("poll-name-server-ms")) {
            // Route refresh: 30 s by default, so a retry topic made after the start is seen that late.
            c.setPollNameServerInterval(integer("poll-name-server-ms", 30000));
        }
        if (flag("tls")) {
            c.setUseTLS(true);
        }
        if (has("client-api-timeout-ms")) {
            // Route lookups and heartbeats: 3 s by default, too short for a JVM starting beside three others on two cores.
            c.setMqClientApiTimeout(integer("client-api-timeout-ms", 3000));
        }
    }

    private static String instance;

    private static synchronized String defaultInstance() {
        if (instance == null) {
            instance = "mqref-" + ManagementFactory.getRuntimeMXBean().getName().replace('@', '-')
                    + "-" + Long.toHexString(System.nanoTime());
        }
        return instance;
    }
}
