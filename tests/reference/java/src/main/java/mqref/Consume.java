package mqref;

import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/** The consume command: a DefaultMQPushConsumer, concurrent or orderly. */
final class Consume {
    /** How long "started" waits for the first rebalance to hand the consumer its queues. */
    private static final long OWN_WAIT_MS = 30_000;

    private Consume() {
    }

    static ConsumeFromWhere fromWhere(String from) {
        switch (from) {
            case "first":
                return ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET;
            case "last":
                return ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET;
            case "timestamp":
                return ConsumeFromWhere.CONSUME_FROM_TIMESTAMP;
            default:
                throw new IllegalArgumentException("unknown --from " + from);
        }
    }

    static int run(Opts o) throws Exception {
        String topic = o.required("topic");
        String mode = o.str("mode", "concurrent");
        String model = o.str("model", "clustering");
        int failTimes = o.integer("fail-times", 0);
        int threads = Math.max(1, o.integer("threads", 4));
        long timeoutMs = o.lng("timeout-s", 60) * 1000;
        Receipts receipts = new Receipts(o);

        DefaultMQPushConsumer c = new DefaultMQPushConsumer(o.str("group", "CG_JAVA_REF"), o.rpcHook(),
                new AllocateMessageQueueAveragely(), o.trace(), null);
        o.apply(c);
        c.subscribe(topic, o.str("subexpr", "*"));
        switch (model) {
            case "clustering":
            case "broadcasting":
                Compat.setMessageModel(c, model.toUpperCase());
                break;
            default:
                throw new IllegalArgumentException("unknown --model " + model);
        }
        if (o.has("pop")) {  // 5.x: rebalance on the broker, which answers POP where setConsumeMode said so
            Compat.serverRebalance(c, o.lng("pop-invisible-ms", 60_000));
        }
        c.setConsumeFromWhere(fromWhere(o.str("from", "first")));
        if (o.has("timestamp")) {
            c.setConsumeTimestamp(o.str("timestamp", null));
        }
        c.setConsumeThreadMin(threads);
        c.setConsumeThreadMax(threads);
        c.setConsumeMessageBatchMaxSize(Math.max(1, o.integer("batch", 1)));
        if (o.has("max-reconsume")) {
            c.setMaxReconsumeTimes(o.integer("max-reconsume", -1));
        }
        // Let in-flight listener calls finish (and print) before done is printed.
        c.setAwaitTerminationMillisWhenShutdown(3000);

        switch (mode) {
            case "concurrent":
                c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                    boolean fail = willFail(msgs, failTimes);
                    receipts.record(msgs, ctx.getMessageQueue(), fail);
                    return fail ? ConsumeConcurrentlyStatus.RECONSUME_LATER
                            : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                break;
            case "orderly":
                c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                    boolean fail = willFail(msgs, failTimes);
                    receipts.record(msgs, ctx.getMessageQueue(), fail);
                    return fail ? ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                            : ConsumeOrderlyStatus.SUCCESS;
                });
                break;
            default:
                throw new IllegalArgumentException("unknown --mode " + mode);
        }

        c.start();
        // "started" once the first rebalance gave this consumer its queues, so a test that sends after
        // it knows the consumer is pulling (bounded: a consumer may own none)
        int owned = Compat.awaitOwnedQueues(c, topic, OWN_WAIT_MS);
        Out.emit("started", "group", c.getConsumerGroup(), "topic", topic, "instance", c.getInstanceName(),
                "queues", owned);
        if (receipts.expect() <= 0) {
            receipts.releaseOnStdinEof();
        }
        boolean finished = receipts.await(timeoutMs);
        Thread.sleep(o.integer("linger-ms", 0));  // e.g. for the trace dispatcher to send its batch
        c.shutdown();
        return receipts.finish(finished);
    }

    /** A batch is retried when any of its messages was delivered fewer than failTimes times before. */
    static boolean willFail(List<MessageExt> msgs, int failTimes) {
        if (failTimes <= 0) {
            return false;
        }
        for (MessageExt m : msgs) {
            if (m.getReconsumeTimes() < failTimes) {
                return true;
            }
        }
        return false;
    }
}
