package mqgrpc;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Entry point: {@code mqgrpc.Main <command> --endpoints HOST:PORT [--key value ...]}, Apache's gRPC client
 * (rocketmq-client-java) driven through a proxy; one JSON event per line on stdout (each with "event" and "t",
 * epoch ms), the client's log in $MQGRPC_LOG_DIR (else a temporary directory removed at exit).
 *
 * <pre>
 * common          --endpoints ADDR (required) --request-timeout-ms 30000
 * produce         --topic T --bodies b0,b1,.. --mode sync|async|fifo|timer|transaction --tags t0,t1,.. (cycled)
 *                 --keys-prefix P --props k=v,.. --message-groups g0,g1,.. (fifo, cycled)
 *                 --deliver-at-ms MS | --deliver-after-ms MS (timer: epoch ms, or that long after the send)
 *                 --outcomes commit|rollback|unknown-commit|unknown-rollback,.. (transaction, cycled; an unknown
 *                 one is left open for the checker, which answers as its suffix says)
 *                 --wait-check-ms 30000 (until every open one was checked)
 *                 events: sent{deliverAt} | send_failed, checked{answer}, done{sent,failed,checked_all};
 *                 exit 2 when a send failed
 * simple-receive  --topic T --group G --expr 'TagA || TagB' --invisible-ms 20000 --await-ms 2000 --max 16
 *                 --expect N (acked messages) | --until-tag TAG --leave K (the first K messages are not acked when
 *                 first received) --change-ms MS (and their invisible duration changed to MS) --rechange-ms MS
 *                 (changed again when they come back, before the ack) --timeout-ms 30000 --linger-ms 0
 *                 events: received, changed, acked, done{received,acked,complete}
 * push            --topic T --group G --expr '*' --expect N (messages consumed with SUCCESS) --fail b0,b1,..
 *                 (FAILURE the first time) --threads 4 --timeout-ms 30000 --linger-ms 0
 *                 --quiet true (no consumed events: done gives firstMs and lastMs, the first and last consumption)
 *                 events: consumed, done{consumed,succeeded,complete}; exits without closing the consumer
 * load            --topic T --seconds 10 --inflight 64 --size 1024: async sends for benchmarks; done{sent,failed,elapsedMs}
 * </pre>
 * A fatal error prints {"event":"error","error":...} and exits 1.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        Out.init();
        try {
            configureLogging();
            if (args.length == 0) {
                throw new IllegalArgumentException("usage: mqgrpc.Main produce|simple-receive|push|load --endpoints ADDR");
            }
            Opts o = new Opts(args, 1);
            int code = switch (args[0]) {
                case "produce" -> Produce.run(o);
                case "simple-receive" -> SimpleReceive.run(o);
                case "push" -> Push.run(o);
                case "load" -> Load.run(o);
                default -> throw new IllegalArgumentException("unknown command: " + args[0]);
            };
            exit(code);
        } catch (Throwable e) {
            Out.finish(Out.event("error", "error", Out.describe(e)));
            e.printStackTrace(System.err);
            exit(1);
        }
    }

    /** Exits with code; a watchdog halts the JVM if shutdown hooks or client threads hang. */
    static void exit(int code) {
        System.err.flush();
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(5000);
            } catch (InterruptedException ignored) {
                // exiting anyway
            }
            Runtime.getRuntime().halt(code);
        }, "mqgrpc-exit-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        System.exit(code);
    }

    /** The client's log level and directory: read once, when its first class loads, so set before. */
    private static void configureLogging() throws Exception {
        String dir = System.getenv("MQGRPC_LOG_DIR");
        if (dir == null || dir.isEmpty()) {
            Path tmp = Files.createTempDirectory("mqgrpc-log");
            dir = tmp.toString();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(tmp), "mqgrpc-log-cleanup"));
        }
        System.setProperty("rocketmq.log.root", dir);
        String level = System.getenv("MQGRPC_LOG_LEVEL");
        System.setProperty("rocketmq.log.level", level == null || level.isEmpty() ? "warn" : level);
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (Exception ignored) {
            // best effort
        }
    }
}
