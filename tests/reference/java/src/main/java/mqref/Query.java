package mqref;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;

/** The query command: messages by key (queryMessage) or by id (viewMessage), client API only. */
final class Query {
    private Query() {
    }

    @SuppressWarnings("deprecation")
    static int run(Opts o) throws Exception {
        String topic = o.str("topic", null);
        String key = o.str("key", null);
        String msgId = o.str("msg-id", null);
        if ((key == null) == (msgId == null)) {
            throw new IllegalArgumentException("query needs exactly one of --key (with --topic) or --msg-id");
        }
        int max = o.integer("max", 32);
        DefaultMQPullConsumer c = new DefaultMQPullConsumer(o.str("group", "CG_JAVA_REF_QUERY"), o.rpcHook());
        o.apply(c);
        c.start();
        List<MessageExt> hits = new ArrayList<>();
        String notFound = null;
        try {
            if (key != null) {
                if (topic == null) {
                    throw new IllegalArgumentException("--key needs --topic");
                }
                QueryResult r = c.queryMessage(topic, key, max, 0, Long.MAX_VALUE);
                hits.addAll(r.getMessageList());
            } else if (topic != null) {
                // Accepts the unique (client) id or the offset id.
                hits.add(c.viewMessage(topic, msgId));
            } else {
                // Offset message id only.
                hits.add(Compat.viewByOffsetId(c, msgId));
            }
        } catch (MQClientException e) {
            // The client reports "nothing found" as an MQClientException; other failures are fatal.
            String text = String.valueOf(e.getErrorMessage()) + " " + e.getMessage();
            if (!text.toLowerCase().contains("no message") && !text.toLowerCase().contains("not found")) {
                throw e;
            }
            notFound = e.getResponseCode() + ": " + e.getErrorMessage();
        }
        for (MessageExt m : hits) {
            if (m == null) {
                continue;
            }
            Map<String, Object> e = Out.event("found");
            e.put("msgId", m.getMsgId());
            if (m instanceof MessageClientExt) {
                e.put("offsetMsgId", ((MessageClientExt) m).getOffsetMsgId());
            }
            e.put("uniqKey", org.apache.rocketmq.common.message.MessageClientIDSetter.getUniqID(m));
            e.put("topic", m.getTopic());
            e.put("keys", m.getKeys());
            e.put("tags", m.getTags());
            e.put("queueId", m.getQueueId());
            e.put("queueOffset", m.getQueueOffset());
            e.put("commitLogOffset", m.getCommitLogOffset());
            byte[] body = m.getBody() == null ? new byte[0] : m.getBody();
            e.put("bodyLen", body.length);
            if (body.length <= 64) {
                e.put("body", new String(body, StandardCharsets.UTF_8));
            }
            Out.emit(e);
        }
        c.shutdown();
        Map<String, Object> done = Out.event("done");
        done.put("found", (int) hits.stream().filter(m -> m != null).count());
        if (notFound != null) {
            done.put("error", notFound);
        }
        Out.finish(done);
        return 0;
    }
}
