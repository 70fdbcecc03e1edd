package mqref;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** Message bodies for produce and the "received" event shared by consume and litepull. */
final class Msgs {
    private Msgs() {
    }

    /** "body-i" when size is 0, else "body-i-" padded with 'x' to exactly size bytes. */
    static byte[] body(int i, int size) {
        if (size <= 0) {
            return ("body-" + i).getBytes(StandardCharsets.UTF_8);
        }
        byte[] head = ("body-" + i + "-").getBytes(StandardCharsets.UTF_8);
        byte[] b = new byte[size];
        Arrays.fill(b, (byte) 'x');
        System.arraycopy(head, 0, b, 0, Math.min(head.length, size));
        return b;
    }

    /** The "received" event of one delivery; mq (may be null) supplies the broker name when the message lacks it. */
    static Map<String, Object> received(MessageExt msg, MessageQueue mq, boolean printProps, boolean willFail) {
        Map<String, Object> e = Out.event("received");
        e.put("msgId", msg.getMsgId());
        if (msg instanceof MessageClientExt) {
            e.put("offsetMsgId", ((MessageClientExt) msg).getOffsetMsgId());
        }
        e.put("topic", msg.getTopic());
        e.put("tags", msg.getTags());
        e.put("keys", msg.getKeys());
        byte[] body = msg.getBody() == null ? new byte[0] : msg.getBody();
        String text = new String(body, StandardCharsets.UTF_8);
        e.put("body", body.length <= 64 ? text : text.substring(0, Math.min(32, text.length())));
        e.put("bodyLen", body.length);
        e.put("queueId", msg.getQueueId());
        e.put("queueOffset", msg.getQueueOffset());
        String broker = msg.getBrokerName();
        if (broker == null && mq != null) {
            broker = mq.getBrokerName();
        }
        e.put("brokerName", broker);
        e.put("reconsumeTimes", msg.getReconsumeTimes());
        e.put("bornTimestamp", msg.getBornTimestamp());
        e.put("storeTimestamp", msg.getStoreTimestamp());
        e.put("receivedAt", System.currentTimeMillis());
        String delay = msg.getProperty(MessageConst.PROPERTY_DELAY_TIME_LEVEL);
        if (delay != null) {
            e.put("delayLevel", parseIntOr(delay));
        }
        if (printProps) {
            e.put("properties", new LinkedHashMap<>(msg.getProperties()));
        }
        e.put("willFail", willFail);
        return e;
    }

    private static Object parseIntOr(String s) {
        try {
            return Integer.parseInt(s.trim());
        } catch (NumberFormatException ex) {
            return s;
        }
    }
}
