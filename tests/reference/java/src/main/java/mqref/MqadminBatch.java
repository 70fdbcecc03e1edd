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
 */
final class MqadminBatch {
    private MqadminBatch() {
    }

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
            try {
                MQAdminStartup.main0(args.toArray(new String[0]), null);
            } catch (Throwable e) {
                System.err.println(Out.describe(e));
            } finally {
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
}
