package mqgrpc;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;

/**
 * The push command: a PushConsumer whose listener answers FAILURE the first time it gets a body of --fail (the
 * client then makes the message invisible for its group's first retry delay and it comes back), SUCCESS
 * otherwise; until --expect messages succeeded, then --linger-ms more to see whether anything else comes.
 */
final class Push {
    private final Set<String> toFail = new HashSet<>();
    private final Set<String> succeeded = new HashSet<>();
    private final boolean quiet;
    private int consumed;
    private long firstMs;
    private long lastMs;

    private Push(Opts o) {
        toFail.addAll(o.list("fail"));
        quiet = "true".equals(o.str("quiet", "false"));
    }

    static int run(Opts o) throws Exception {
        return new Push(o).go(o);
    }

    /** Ends without closing the consumer: its close waits for the receive it has in flight, a long poll of the
     * proxy's max long polling time (20 s by default), and nothing it could do then would be seen. */
    @SuppressWarnings("resource")
    private int go(Opts o) throws Exception {
        int expect = o.integer("expect", 1);
        PushConsumer c = Clients.provider().newPushConsumerBuilder().setClientConfiguration(Clients.config(o))
                .setConsumerGroup(o.required("group")).setSubscriptionExpressions(Clients.subscription(o))
                .setConsumptionThreadCount(o.integer("threads", 4)).setMessageListener(this::consume).build();
        Out.emit("started", "group", c.getConsumerGroup());
        boolean complete = await(expect, o.lng("timeout-ms", 30_000));
        await(Integer.MAX_VALUE, complete ? o.lng("linger-ms", 0) : 0);
        synchronized (this) {
            Out.finish(Out.event("done", "consumed", consumed, "succeeded", succeeded.size(), "complete", complete,
                    "firstMs", firstMs, "lastMs", lastMs));
        }
        return 0;
    }

    private ConsumeResult consume(MessageView m) {
        String body = Clients.body(m);
        synchronized (this) {
            consumed++;
            ConsumeResult result = toFail.remove(body) ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
            if (result == ConsumeResult.SUCCESS) {
                succeeded.add(m.getMessageId().toString());
            }
            lastMs = System.currentTimeMillis();
            firstMs = firstMs == 0 ? lastMs : firstMs;
            if (!quiet) {
                Map<String, Object> event = Clients.seen("consumed", m);
                event.put("result", result.name());
                Out.emit(event);  // before the main thread, woken, may print done
            }
            notifyAll();
            return result;
        }
    }

    /** Waits until `expect` messages succeeded, at most `ms`; whether they did. */
    private synchronized boolean await(int expect, long ms) throws InterruptedException {
        long deadline = System.currentTimeMillis() + ms;
        while (succeeded.size() < expect) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                return false;
            }
            wait(left);
        }
        return true;
    }
}
