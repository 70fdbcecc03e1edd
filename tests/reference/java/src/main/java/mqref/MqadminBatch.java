package mqref;

import com.alibaba.fastjson.JSON;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * {@code mqadmin-batch}: Apache's mqadmin commands run one after another in this one JVM, so a test that
 * compares dozens of them pays for one JVM start, not one per command. Each stdin line is a JSON array of
 * one command's arguments (as after {@code mqadmin}); each is answered by one event
 * {@code {"event":"mqadmin","args":[...],"out":STDOUT,"err":STDERR,"ms":N}} before the next line is read.
 * mqadmin exits the JVM on options it cannot parse; here that exit is turned into the command's end
 * ("exit N" on stderr), so one bad command does not end the batch (needs -Djava.security.manager=allow).
 * A comparison runs each command once per JVM (a batch per side and test): a second brokerConsumeStats or
 * queryMsgByUniqueKey in one JVM failed to connect to mq's broker where a fresh JVM did not.
 */
final class MqadminBatch {
    private MqadminBatch() {
    }

    @SuppressWarnings("removal")
    static int run() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = System.out;
        PrintStream err = System.err;
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isBlank()) {
                continue;
            }
            List<String> args = JSON.parseArray(line, String.class);
            ByteArrayOutputStream stdout = new ByteArrayOutputStream();
            ByteArrayOutputStream stderr = new ByteArrayOutputStream();
            long start = System.nanoTime();
            System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
            SecurityManager previous = System.getSecurityManager();
            System.setSecurityManager(new NoExit());
            try {
                MQAdminStartup.main0(args.toArray(new String[0]), null);
            } catch (ExitTrapped e) {
                System.err.println("exit " + e.status);
            } catch (Throwable e) {
                System.err.println(Out.describe(e));
            } finally {
                System.setSecurityManager(previous);
                System.out.flush();
                System.err.flush();
                System.setOut(out);
                System.setErr(err);
            }
            Out.emit("mqadmin", "args", args, "out", stdout.toString(StandardCharsets.UTF_8),
                    "err", stderr.toString(StandardCharsets.UTF_8), "ms", (System.nanoTime() - start) / 1_000_000);
        }
        return 0;
    }

    /** Thrown instead of exiting the JVM while a command runs. */
    private static final class ExitTrapped extends SecurityException {
        private static final long serialVersionUID = 1L;
        final int status;

        ExitTrapped(int status) {
            super("exit " + status);
            this.status = status;
        }
    }

    /** Permits everything but System.exit, which it turns into {@link ExitTrapped}. */
    @SuppressWarnings("removal")
    private static final class NoExit extends SecurityManager {
        @Override
        public void checkExit(int status) {
            throw new ExitTrapped(status);
        }

        @Override
        public void checkPermission(java.security.Permission perm) {
            // everything else is allowed
        }
    }
}
