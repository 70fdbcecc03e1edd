package mqgrpc;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * The simple-receive command: receive (each call with --invisible-ms, long polling --await-ms) and ack, until
 * --expect messages were acked or one tagged --until-tag was; the first --leave messages are left unacked (their
 * invisible duration changed to --change-ms when given) so they come back, and when they do, changed to
 * --rechange-ms (when given) and acked. Then --linger-ms more of receiving, to see whether anything else comes.
 */
final class SimpleReceive {
    private final Opts o;
    private final Set<String> left = new HashSet<>();
    private int received;
    private int acked;
    private boolean complete;

    private SimpleReceive(Opts o) {
        this.o = o;
    }

    static int run(Opts o) throws Exception {
        return new SimpleReceive(o).go();
    }

    private int go() throws Exception {
        long invisible = o.lng("invisible-ms", 20_000);
        int max = o.integer("max", 16);
        long end = System.currentTimeMillis() + o.lng("timeout-ms", 30_000);
        try (SimpleConsumer c = Clients.provider().newSimpleConsumerBuilder()
                .setClientConfiguration(Clients.config(o)).setConsumerGroup(o.required("group"))
                .setAwaitDuration(Clients.ms(o.lng("await-ms", 2000)))
                .setSubscriptionExpressions(Clients.subscription(o)).build()) {
            Out.emit("started");
            while (System.currentTimeMillis() < end) {
                List<MessageView> got = c.receive(max, Clients.ms(invisible));
                for (MessageView m : got) {
                    handle(c, m);
                }
                if (!complete && (complete = isComplete(got))) {
                    end = System.currentTimeMillis() + o.lng("linger-ms", 0);
                }
            }
        }
        Out.finish(Out.event("done", "received", received, "acked", acked, "complete", complete));
        return 0;
    }

    private boolean isComplete(List<MessageView> got) {
        String tag = o.str("until-tag", null);
        if (tag != null) {
            return got.stream().anyMatch(m -> m.getTag().orElse("").equals(tag));
        }
        return acked >= o.integer("expect", 1);
    }

    private void handle(SimpleConsumer c, MessageView m) {
        received++;
        String id = m.getMessageId().toString();
        boolean leave = left.size() < o.integer("leave", 0) && left.add(id);
        Map<String, Object> event = Clients.seen("received", m);
        event.put("action", leave ? "leave" : "ack");
        Out.emit(event);
        if (leave) {
            if (o.str("change-ms", null) != null) {
                change(c, m, o.lng("change-ms", 0));
            }
            return;
        }
        if (left.contains(id) && o.str("rechange-ms", null) != null) {
            change(c, m, o.lng("rechange-ms", 0));
        }
        try {
            c.ack(m);
            acked++;
            Out.emit("acked", "messageId", id, "body", Clients.body(m));
        } catch (Exception e) {
            Out.emit("acked", "messageId", id, "body", Clients.body(m), "error", Out.describe(e));
        }
    }

    /** Changes m's invisible duration; the client keeps the new receipt handle in m for its next call. */
    private void change(SimpleConsumer c, MessageView m, long ms) {
        try {
            c.changeInvisibleDuration(m, Clients.ms(ms));
            Out.emit("changed", "messageId", m.getMessageId().toString(), "ms", ms);
        } catch (Exception e) {
            Out.emit("changed", "messageId", m.getMessageId().toString(), "ms", ms, "error", Out.describe(e));
        }
    }
}
