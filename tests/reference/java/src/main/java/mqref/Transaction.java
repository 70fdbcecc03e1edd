package mqref;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The transaction command: half messages whose local outcome and check-back answer are set by --outcome;
 * then up to --wait-check-s seconds for the brokers' checks, fewer once --expect-checks were answered.
 */
final class Transaction {
    private Transaction() {
    }

    static int run(Opts o) throws Exception {
        String topic = o.required("topic");
        int count = o.integer("count", 1);
        String outcome = o.str("outcome", "commit");
        long waitCheckMs = o.lng("wait-check-s", 0) * 1000;
        int expectChecks = o.integer("expect-checks", 0);
        long timeoutMs = o.lng("send-timeout-ms", 3000);
        String tag = o.str("tag", null);
        String keysPrefix = o.str("keys-prefix", "key-");
        int bodySize = o.integer("body-size", 0);

        LocalTransactionState local;
        LocalTransactionState check;
        switch (outcome) {
            case "commit":
                local = LocalTransactionState.COMMIT_MESSAGE;
                check = LocalTransactionState.COMMIT_MESSAGE;
                break;
            case "rollback":
                local = LocalTransactionState.ROLLBACK_MESSAGE;
                check = LocalTransactionState.ROLLBACK_MESSAGE;
                break;
            case "unknown-then-commit":
                local = LocalTransactionState.UNKNOW;
                check = LocalTransactionState.COMMIT_MESSAGE;
                break;
            case "unknown-then-rollback":
                local = LocalTransactionState.UNKNOW;
                check = LocalTransactionState.ROLLBACK_MESSAGE;
                break;
            default:
                throw new IllegalArgumentException("unknown --outcome " + outcome);
        }

        AtomicInteger checks = new AtomicInteger();
        TransactionMQProducer p = new TransactionMQProducer(null, o.str("group", "PG_JAVA_REF_TX"), o.rpcHook(),
                o.trace(), null);
        o.apply(p);
        p.setSendMsgTimeout((int) timeoutMs);
        p.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return local;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checks.incrementAndGet();
                Out.emit("checked", "msgId", msg.getMsgId(), "uniqKey", MessageClientIDSetter.getUniqID(msg),
                        "transactionId", msg.getTransactionId(), "keys", msg.getKeys(),
                        "answer", check.name());
                return check;
            }
        });
        p.start();

        int ok = 0;
        int failed = 0;
        for (int i = 0; i < count; i++) {
            Message m = new Message(topic, Msgs.body(i, bodySize));
            if (tag != null && !tag.isEmpty()) {
                m.setTags(tag);
            }
            m.setKeys(keysPrefix + i);
            try {
                TransactionSendResult r = p.sendMessageInTransaction(m, null);
                ok++;
                Map<String, Object> e = Out.event("sent");
                e.put("i", i);
                e.put("status", r.getSendStatus() == null ? null : r.getSendStatus().name());
                e.put("localState", r.getLocalTransactionState() == null ? null
                        : r.getLocalTransactionState().name());
                e.put("msgId", r.getMsgId());
                e.put("offsetMsgId", r.getOffsetMsgId());
                e.put("transactionId", r.getTransactionId());
                if (r.getMessageQueue() != null) {
                    e.put("broker", r.getMessageQueue().getBrokerName());
                    e.put("queueId", r.getMessageQueue().getQueueId());
                }
                e.put("queueOffset", r.getQueueOffset());
                e.put("key", m.getKeys());
                Out.emit(e);
            } catch (Exception ex) {
                failed++;
                Out.emit("send_failed", "i", i, "error", Out.describe(ex));
            }
        }
        long deadline = System.currentTimeMillis() + waitCheckMs;
        while (System.currentTimeMillis() < deadline && (expectChecks <= 0 || checks.get() < expectChecks)) {
            Thread.sleep(50);
        }
        p.shutdown();
        Map<String, Object> done = Out.event("done");
        done.put("sent", ok);
        done.put("failed", failed);
        done.put("checked", checks.get());
        Out.finish(done);
        return failed > 0 ? 2 : 0;
    }
}
