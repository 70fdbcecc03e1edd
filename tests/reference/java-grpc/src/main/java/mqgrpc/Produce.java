package mqgrpc;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.ProducerBuilder;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/** The produce command: one message per --bodies item, sent as --mode says (see Main). */
final class Produce {
    private final Opts o;
    private final ClientServiceProvider provider = Clients.provider();
    private final String topic;
    private final String mode;
    private final List<String> bodies;
    private final Map<Integer, Long> deliverAt = new HashMap<>();
    private int sent;
    private int failed;

    private Produce(Opts o) {
        this.o = o;
        topic = o.required("topic");
        mode = o.str("mode", "sync");
        bodies = o.list("bodies");
    }

    static int run(Opts o) throws Exception {
        return new Produce(o).go();
    }

    private int go() throws Exception {
        Transactions tx = mode.equals("transaction") ? new Transactions(bodies, o.list("outcomes")) : null;
        ProducerBuilder builder = provider.newProducerBuilder().setClientConfiguration(Clients.config(o))
                .setTopics(topic);
        if (tx != null) {
            builder.setTransactionChecker(tx);
        }
        boolean checkedAll = true;
        try (Producer producer = builder.build()) {
            List<CompletableFuture<SendReceipt>> pending = new ArrayList<>();
            for (int i = 0; i < bodies.size(); i++) {
                Message m = build(i);
                try {
                    switch (mode) {
                        case "async" -> pending.add(producer.sendAsync(m));
                        case "transaction" -> sent(i, tx.send(producer, m, bodies.get(i)));
                        case "sync", "fifo", "timer" -> sent(i, producer.send(m));
                        default -> throw new IllegalArgumentException("unknown --mode " + mode);
                    }
                } catch (IllegalArgumentException e) {
                    throw e;
                } catch (Exception e) {
                    failed(i, e);
                }
            }
            for (int i = 0; i < pending.size(); i++) {
                try {
                    sent(i, pending.get(i).join());
                } catch (Exception e) {
                    failed(i, e);
                }
            }
            if (tx != null) {
                checkedAll = tx.awaitChecks(o.lng("wait-check-ms", 30_000));
            }
        }
        Out.finish(Out.event("done", "sent", sent, "failed", failed, "checked_all", checkedAll));
        return failed > 0 ? 2 : 0;
    }

    /** Message i: its body, the i-th tag (cycled), keys, properties, and the mode's message group or time. */
    private Message build(int i) {
        MessageBuilder b = provider.newMessageBuilder().setTopic(topic)
                .setBody(bodies.get(i).getBytes(StandardCharsets.UTF_8));
        List<String> tags = o.list("tags");
        if (!tags.isEmpty()) {
            b.setTag(tags.get(i % tags.size()));
        }
        String keysPrefix = o.str("keys-prefix", null);
        if (keysPrefix != null) {
            b.setKeys(keysPrefix + i);
        }
        for (Map.Entry<String, String> e : o.props("props").entrySet()) {
            b.addProperty(e.getKey(), e.getValue());
        }
        if (mode.equals("fifo")) {
            List<String> groups = o.list("message-groups");
            b.setMessageGroup(groups.get(i % groups.size()));
        }
        if (mode.equals("timer")) {
            long at = o.lng("deliver-at-ms", System.currentTimeMillis() + o.lng("deliver-after-ms", 0));
            deliverAt.put(i, at);
            b.setDeliveryTimestamp(at);
        }
        return b.build();
    }

    private void sent(int i, SendReceipt r) {
        sent++;
        Out.emit("sent", "i", i, "body", bodies.get(i), "messageId", r.getMessageId().toString(),
                "deliverAt", deliverAt.get(i));
    }

    private void failed(int i, Throwable e) {
        failed++;
        Throwable cause = e instanceof java.util.concurrent.CompletionException && e.getCause() != null
                ? e.getCause() : e;
        Out.emit("send_failed", "i", i, "body", bodies.get(i), "error", Out.describe(cause));
    }
}
