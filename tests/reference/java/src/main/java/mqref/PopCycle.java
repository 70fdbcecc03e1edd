package mqref;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.AckCallback;
import org.apache.rocketmq.client.consumer.AckResult;
import org.apache.rocketmq.client.consumer.PopCallback;
import org.apache.rocketmq.client.consumer.PopResult;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.header.AckMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.ChangeInvisibleTimeRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;

/**
 * The pop-cycle command (5.x client only; Main loads it by name, the 4.x build leaves it out): the POP
 * requests of rocketmq-client 5.5's MQClientAPIImpl, in the serialize type of --serialize (JSON or ROCKETMQ,
 * whose 16-bit code field carries POP_MESSAGE's 200050 as 3442), against the broker of a one-queue topic.
 *
 * <pre>
 * pop-cycle --topic T --group G --count N (4) --serialize JSON|ROCKETMQ
 *   sends N, pops them (invisible 60 s), changes the first one's invisible time to --back-ms (1000), acks the
 *   rest, pops until the first comes back (its reconsume times go up by one), acks it, pops once more (nothing).
 *   events: popped{round,status,bodies,reconsumeTimes}, changed{status}, acked{status}, done; a broker that
 *   refuses the first pop ends it: done{refusedCode,refusedRemark}
 * </pre>
 */
public final class PopCycle {
    private static final long TIMEOUT_MS = 5000;

    private PopCycle() {
    }

    public static int run(Opts o) throws Exception {
        String topic = o.required("topic");
        String group = o.str("group", "CG_JAVA_REF_POP");
        int count = o.integer("count", 4);
        long backMs = o.lng("back-ms", 1000);
        DefaultMQProducer producer = new DefaultMQProducer(o.str("producer-group", "PG_JAVA_REF_POP"), o.rpcHook());
        o.apply(producer);
        producer.start();
        try {
            List<String> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String body = "pop-" + i;
                SendResult r = producer.send(new Message(topic, "TagPop", body.getBytes(StandardCharsets.UTF_8)));
                sent.add(r.getSendStatus().name());
            }
            Out.emit("sent", "statuses", sent);
            MQClientInstance factory = producer.getDefaultMQProducerImpl().getMqClientFactory();
            MessageQueue mq = producer.fetchPublishMessageQueues(topic).get(0);
            String addr = factory.findBrokerAddressInPublish(mq.getBrokerName());
            MQClientAPIImpl api = factory.getMQClientAPIImpl();
            Pop pop = new Pop(api, mq.getBrokerName(), addr, topic, group);

            List<MessageExt> first;
            try {
                first = pop.take("first", count, 60_000, 3_000);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof MQBrokerException)) {
                    throw e;
                }
                // the broker refused the request (Apache's own broker refuses the 16-bit code of a binary header)
                MQBrokerException refused = (MQBrokerException) e.getCause();
                Map<String, Object> done = Out.event("done");
                done.put("refusedCode", refused.getResponseCode());
                done.put("refusedRemark", refused.getErrorMessage());
                Out.finish(done);
                return 0;
            }
            MessageExt back = first.get(0);
            emitAck("changed", pop.changeInvisible(back, backMs));
            for (MessageExt m : first.subList(1, first.size())) {
                emitAck("acked", pop.ack(m));
            }
            List<MessageExt> again = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 20_000;
            while (again.isEmpty() && System.currentTimeMillis() < deadline) {
                again = pop.take("again", count, 60_000, 5_000);
            }
            for (MessageExt m : again) {
                emitAck("acked", pop.ack(m));
            }
            pop.take("last", count, 60_000, 1_000);
            Out.finish(Out.event("done"));
            return 0;
        } finally {
            producer.shutdown();
        }
    }

    private static void emitAck(String event, AckResult r) {
        Out.emit(event, "status", r.getStatus() == null ? null : r.getStatus().name());
    }

    /** The three requests on one broker, each waited for. */
    private static final class Pop {
        private final MQClientAPIImpl api;
        private final String brokerName;
        private final String addr;
        private final String topic;
        private final String group;

        Pop(MQClientAPIImpl api, String brokerName, String addr, String topic, String group) {
            this.api = api;
            this.brokerName = brokerName;
            this.addr = addr;
            this.topic = topic;
            this.group = group;
        }

        List<MessageExt> take(String round, int max, long invisibleMs, long pollMs) throws Exception {
            PopMessageRequestHeader h = new PopMessageRequestHeader();
            h.setConsumerGroup(group);
            h.setTopic(topic);
            h.setQueueId(-1);
            h.setMaxMsgNums(max);
            h.setInvisibleTime(invisibleMs);
            h.setPollTime(pollMs);
            h.setBornTime(System.currentTimeMillis());
            h.setInitMode(0); // ConsumeInitMode.MIN: from the first offset, as a new group
            h.setExpType("TAG");
            h.setExp("*");
            CompletableFuture<PopResult> done = new CompletableFuture<>();
            api.popMessageAsync(brokerName, addr, h, pollMs + TIMEOUT_MS, new PopCallback() {
                @Override
                public void onSuccess(PopResult popResult) {
                    done.complete(popResult);
                }

                @Override
                public void onException(Throwable e) {
                    done.completeExceptionally(e);
                }
            });
            PopResult r = done.get(pollMs + 2 * TIMEOUT_MS, TimeUnit.MILLISECONDS);
            List<MessageExt> found = r.getMsgFoundList() == null ? new ArrayList<>() : r.getMsgFoundList();
            List<String> bodies = new ArrayList<>();
            List<Integer> times = new ArrayList<>();
            for (MessageExt m : found) {
                bodies.add(new String(m.getBody(), StandardCharsets.UTF_8));
                times.add(m.getReconsumeTimes());
            }
            Map<String, Object> e = Out.event("popped");
            e.put("round", round);
            e.put("status", r.getPopStatus().name());
            e.put("bodies", bodies);
            e.put("reconsumeTimes", times);
            Out.emit(e);
            return found;
        }

        AckResult changeInvisible(MessageExt m, long invisibleMs) throws Exception {
            ChangeInvisibleTimeRequestHeader h = new ChangeInvisibleTimeRequestHeader();
            h.setConsumerGroup(group);
            h.setTopic(topic);
            h.setQueueId(m.getQueueId());
            h.setExtraInfo(m.getProperty(MessageConst.PROPERTY_POP_CK));
            h.setOffset(m.getQueueOffset());
            h.setInvisibleTime(invisibleMs);
            CompletableFuture<AckResult> done = new CompletableFuture<>();
            api.changeInvisibleTimeAsync(brokerName, addr, h, TIMEOUT_MS, callback(done));
            return done.get(2 * TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }

        AckResult ack(MessageExt m) throws Exception {
            AckMessageRequestHeader h = new AckMessageRequestHeader();
            h.setConsumerGroup(group);
            h.setTopic(topic);
            h.setQueueId(m.getQueueId());
            h.setExtraInfo(m.getProperty(MessageConst.PROPERTY_POP_CK));
            h.setOffset(m.getQueueOffset());
            CompletableFuture<AckResult> done = new CompletableFuture<>();
            api.ackMessageAsync(addr, TIMEOUT_MS, callback(done), h);
            return done.get(2 * TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }

        private static AckCallback callback(CompletableFuture<AckResult> done) {
            return new AckCallback() {
                @Override
                public void onSuccess(AckResult ackResult) {
                    done.complete(ackResult);
                }

                @Override
                public void onException(Throwable e) {
                    done.completeExceptionally(e);
                }
            };
        }
    }
}
