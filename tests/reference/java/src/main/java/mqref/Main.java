package mqref;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Entry point: {@code mqref.Main <command> [--key value ...]}; events go to stdout as JSON lines
 * (one object per line, each with "event" and "t"), client logs to $MQREF_LOG_DIR (else a temp dir).
 *
 * <pre>
 * common      --namesrv ADDR (required)  --group G  --ak AK --sk SK  --tls  --trace  --instance NAME
 *             --poll-name-server-ms MS (route refresh, 30000 by default)
 * produce     --topic T --count N --mode sync|async|oneway|batch|orderly --batch-size 32 --tag TAG
 *             --keys-prefix key- --body-size 0 --delay-level L --order-keys 4 --props k=v,k2=v2
 *             --threads 1 --in-flight 256 --send-timeout-ms 3000 --retries 2 --latency --quiet
 *             events: sent | send_failed, done{sent,failed,elapsed_ms,msgs_per_s[,p50_us,p99_us]}
 *             exit 0, or 2 when a send failed
 * consume     --topic T --mode concurrent|orderly --model clustering|broadcasting
 *             --from first|last|timestamp --timestamp yyyyMMddHHmmss --subexpr '*' --expect N
 *             --timeout-s 60 --fail-times K --max-reconsume M --threads 4 --batch 1 --quiet --print-props
 *             events: started, received, done{received,distinct[,msgs_per_s][,timeout]}; exit 3 on timeout
 * litepull    --topic T --mode subscribe|assign --from first|last --expect N --timeout-s 60 (same events)
 * transaction --topic T --count N --outcome commit|rollback|unknown-then-commit|unknown-then-rollback
 *             --wait-check-s 0; events: sent | send_failed, checked, done{sent,failed,checked}
 * query       --topic T --key K | [--topic T] --msg-id ID; events: found, done{found[,error]}
 * mqadmin-batch  Apache's mqadmin commands read from stdin, one JSON array of arguments per line; events:
 *             mqadmin{args,out,err,ms} (see MqadminBatch). Needs ROCKETMQ_HOME like mqadmin.
 * pop-cycle   (5.x client) POP, change invisible time and ack through the client's own API (see PopCycle);
 *             --serialize JSON|ROCKETMQ sets the header format of every request (rocketmq.serialize.type)
 * </pre>
 * A fatal error prints {"event":"error","error":...} and exits 1. With --expect 0 the consumers run
 * until stdin reaches EOF (still bounded by --timeout-s).
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        Out.init();
        try {
            // These must be set before any RocketMQ class initializes (they are read in static blocks).
            configureSystem(args);
            if (args.length == 0) {
                throw new IllegalArgumentException(
                        "usage: mqref.Main produce|consume|litepull|transaction|query --namesrv ADDR [--key value ...]");
            }
            Opts o = new Opts(args, 1);
            int code;
            switch (args[0]) {
                case "produce":
                    code = Produce.run(o);
                    break;
                case "consume":
                    code = Consume.run(o);
                    break;
                case "litepull":
                    code = LitePull.run(o);
                    break;
                case "transaction":
                    code = Transaction.run(o);
                    break;
                case "query":
                    code = Query.run(o);
                    break;
                case "mqadmin-batch":
                    code = MqadminBatch.run();
                    break;
                case "pop-cycle":
                    // by name: the 4.x build has no POP API and leaves the class out
                    code = (int) Class.forName("mqref.PopCycle").getMethod("run", Opts.class).invoke(null, o);
                    break;
                default:
                    throw new IllegalArgumentException("unknown command: " + args[0]);
            }
            exit(code);
        } catch (Throwable e) {
            Out.fatal(e);
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
        }, "mqref-exit-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        System.exit(code);
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (Exception ignored) {
            // best effort
        }
    }

    private static void configureSystem(String[] args) throws Exception {
        String logDir = System.getenv("MQREF_LOG_DIR");
        if (logDir == null || logDir.isEmpty()) {
            // A private temp dir, removed at exit; set MQREF_LOG_DIR to keep the client's logs.
            Path tmp = Files.createTempDirectory("mqref-log");
            logDir = tmp.toString();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(tmp), "mqref-log-cleanup"));
        } else {
            new File(logDir).mkdirs();
        }
        System.setProperty("rocketmq.client.logRoot", logDir);
        String level = System.getenv("MQREF_LOG_LEVEL");
        System.setProperty("rocketmq.client.logLevel", level == null || level.isEmpty() ? "WARN" : level);
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if ("--serialize".equals(a) && i + 1 < args.length) {
                System.setProperty("rocketmq.serialize.type", args[i + 1]);
            }
            if ("--tls".equals(a)) {
                System.setProperty("tls.enable", "true");
                System.setProperty("tls.test.mode.enable", "true");
            }
        }
    }
}
