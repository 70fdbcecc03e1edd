package mqref;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The few client calls whose types moved between rocketmq-client 4.9 and 5.x, reached by reflection so
 * one harness source builds on both: MessageModel left common.protocol.heartbeat for
 * remoting.protocol.heartbeat, viewMessage(offsetMsgId) lost its one-argument form, and 5.x added
 * server-side rebalance (setClientRebalance, POP process queues).
 */
final class Compat {
    private Compat() {
    }

    /** setMessageModel with the enum constant called {@code name}, whichever package the enum is in. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void setMessageModel(DefaultMQPushConsumer c, String name) throws ReflectiveOperationException {
        for (Method m : c.getClass().getMethods()) {
            if (m.getName().equals("setMessageModel") && m.getParameterCount() == 1) {
                Class<? extends Enum> type = (Class<? extends Enum>) m.getParameterTypes()[0];
                m.invoke(c, Enum.valueOf(type, name));
                return;
            }
        }
        throw new NoSuchMethodException("setMessageModel");
    }

    /**
     * setClientRebalance(false): the broker assigns queues and may hand them out for POP, each message
     * invisible to the others for {@code invisibleMs} (5.x only).
     */
    static void serverRebalance(DefaultMQPushConsumer c, long invisibleMs) throws ReflectiveOperationException {
        c.getClass().getMethod("setClientRebalance", boolean.class).invoke(c, false);
        c.getClass().getMethod("setPopInvisibleTime", long.class).invoke(c, invisibleMs);
    }

    /** The POP process queues of a 5.x rebalance (none on 4.x, which has no such table). */
    @SuppressWarnings("unchecked")
    static Iterable<MessageQueue> popQueues(Object rebalance) {
        try {
            return ((java.util.Map<MessageQueue, ?>) rebalance.getClass().getMethod("getPopProcessQueueTable")
                    .invoke(rebalance)).keySet();
        } catch (ReflectiveOperationException e) {
            return java.util.Collections.emptyList();
        }
    }

    /**
     * Waits until the consumer's rebalance holds queues of {@code topic} (at most {@code maxMs}); the
     * number it holds then. The process queue table is where both 4.x and 5.x keep them; 5.x keeps
     * the queues it POPs in a table of their own.
     */
    static int awaitOwnedQueues(DefaultMQPushConsumer c, String topic, long maxMs) throws InterruptedException {
        long end = System.currentTimeMillis() + maxMs;
        while (true) {
            int owned = 0;
            Object rebalance = c.getDefaultMQPushConsumerImpl().getRebalanceImpl();
            for (MessageQueue mq : c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable()
                    .keySet()) {
                if (mq.getTopic().equals(topic)) {
                    owned++;
                }
            }
            for (MessageQueue mq : popQueues(rebalance)) {
                if (mq.getTopic().equals(topic)) {
                    owned++;
                }
            }
            if (owned > 0 || System.currentTimeMillis() >= end) {
                return owned;
            }
            Thread.sleep(20);
        }
    }

    /** viewMessage(offsetMsgId), which 4.x's pull consumer has and 5.x's does not. */
    static MessageExt viewByOffsetId(DefaultMQPullConsumer c, String offsetMsgId) throws Exception {
        Method m;
        try {
            m = c.getClass().getMethod("viewMessage", String.class);
        } catch (NoSuchMethodException e) {
            throw new UnsupportedOperationException("this client has no viewMessage(offsetMsgId): give --topic");
        }
        try {
            return (MessageExt) m.invoke(c, offsetMsgId);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            throw cause instanceof Exception ? (Exception) cause : e;
        }
    }
}
