package mqgrpc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.java.message.MessageViewImpl;

/** What every command shares: the client provider, its configuration, and what an event says of a message. */
final class Clients {
    private Clients() {
    }

    static ClientServiceProvider provider() {
        return ClientServiceProvider.loadService();
    }

    /** The proxy at --endpoints, in plain text (the reference proxies serve no TLS on their gRPC port). */
    static ClientConfiguration config(Opts o) {
        return ClientConfiguration.newBuilder().setEndpoints(o.required("endpoints")).enableSsl(false)
                .setRequestTimeout(o.millis("request-timeout-ms", 30_000)).build();
    }

    /** --topic subscribed with the tag expression --expr. */
    static Map<String, FilterExpression> subscription(Opts o) {
        return Map.of(o.required("topic"), new FilterExpression(o.str("expr", "*"), FilterExpressionType.TAG));
    }

    static String body(MessageView m) {
        return StandardCharsets.UTF_8.decode(m.getBody().duplicate()).toString();
    }

    /** An event about a received message: all the client shows of it. */
    static Map<String, Object> seen(String event, MessageView m) {
        List<String> keys = new ArrayList<>(m.getKeys());
        Collections.sort(keys);
        return Out.event(event, "messageId", m.getMessageId().toString(), "topic", m.getTopic(), "body", body(m),
                "tag", m.getTag(), "keys", keys, "properties", new TreeMap<>(m.getProperties()),
                "group", m.getMessageGroup(), "attempt", m.getDeliveryAttempt(),
                "deliveryTimestamp", m.getDeliveryTimestamp(), "bornTimestamp", m.getBornTimestamp(),
                "receiptHandle", m instanceof MessageViewImpl ? ((MessageViewImpl) m).getReceiptHandle() : null);
    }

    static Duration ms(long millis) {
        return Duration.ofMillis(millis);
    }
}
