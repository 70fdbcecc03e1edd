package mqref;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** The litepull command: DefaultLitePullConsumer in subscribe or assign mode. */
final class LitePull {
    private LitePull() {
    }

    static int run(Opts o) throws Exception {
        String topic = o.required("topic");
        String mode = o.str("mode", "subscribe");
        String from = o.str("from", "first");
        long timeoutMs = o.lng("timeout-s", 60) * 1000;
        Receipts receipts = new Receipts(o);

        DefaultLitePullConsumer c = new DefaultLitePullConsumer(o.str("group", "CG_JAVA_REF_LITE"), o.rpcHook());
        o.apply(c);
        c.setEnableMsgTrace(o.trace());
        c.setConsumeFromWhere(Consume.fromWhere(from));
        if (o.has("timestamp")) {
            c.setConsumeTimestamp(o.str("timestamp", null));
        }
        c.setPollTimeoutMillis(1000);
        List<MessageQueue> assigned = new ArrayList<>();
        switch (mode) {
            case "subscribe":
                c.subscribe(topic, o.str("subexpr", "*"));
                c.start();
                break;
            case "assign":
                c.start();
                Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
                assigned.addAll(mqs);
                // No seekToBegin/seekToEnd here: assign() has already started a pull task per queue,
                // and seek() racing with a task whose pull is in flight can hand one queue's messages
                // over twice (seen on a fast broker). The group is new, so ConsumeFromWhere decides.
                c.assign(mqs);
                break;
            default:
                throw new IllegalArgumentException("unknown --mode " + mode);
        }
        Map<String, Object> started = Out.event("started");
        started.put("group", c.getConsumerGroup());
        started.put("topic", topic);
        if (!assigned.isEmpty()) {
            List<String> qs = new ArrayList<>();
            for (MessageQueue mq : assigned) {
                qs.add(mq.getBrokerName() + ":" + mq.getQueueId());
            }
            started.put("queues", qs);
        }
        Out.emit(started);
        if (receipts.expect() <= 0) {
            receipts.releaseOnStdinEof();
        }

        long deadline = System.currentTimeMillis() + timeoutMs;
        boolean finished = false;
        while (true) {
            if (receipts.await(0)) {
                finished = true;
                break;
            }
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                break;
            }
            List<MessageExt> msgs = c.poll(Math.min(1000, left));
            if (msgs != null && !msgs.isEmpty()) {
                receipts.record(msgs, null, false);
            }
        }
        c.commitSync();
        c.shutdown();
        return receipts.finish(finished);
    }
}
