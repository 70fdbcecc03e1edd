package mqgrpc;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionChecker;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * Transactional sends, each ended as its --outcomes item says: commit, rollback, or left open (unknown-commit,
 * unknown-rollback) for the broker to check through the proxy; the checker answers by the body's outcome (an
 * ended transaction may be checked too, before the broker has recorded its end).
 */
final class Transactions implements TransactionChecker {
    private final Map<String, String> outcomes = new HashMap<>();
    private final Set<String> open = new HashSet<>();
    private final Set<String> checked = new HashSet<>();

    Transactions(List<String> bodies, List<String> outcomes) {
        for (int i = 0; i < bodies.size(); i++) {
            String outcome = outcomes.get(i % outcomes.size());
            this.outcomes.put(bodies.get(i), outcome);
            if (outcome.startsWith("unknown-")) {
                open.add(bodies.get(i));
            }
        }
    }

    SendReceipt send(Producer producer, Message m, String body) throws ClientException {
        Transaction tx = producer.beginTransaction();
        SendReceipt receipt = producer.send(m, tx);
        switch (outcomes.get(body)) {
            case "commit" -> tx.commit();
            case "rollback" -> tx.rollback();
            default -> {
                // left open: the broker asks the checker
            }
        }
        return receipt;
    }

    @Override
    public TransactionResolution check(MessageView m) {
        String body = Clients.body(m);
        String outcome = outcomes.get(body);
        TransactionResolution answer = outcome == null ? TransactionResolution.UNKNOWN
                : outcome.endsWith("rollback") ? TransactionResolution.ROLLBACK : TransactionResolution.COMMIT;
        Map<String, Object> event = Clients.seen("checked", m);
        event.put("answer", answer.name());
        Out.emit(event);
        synchronized (this) {
            checked.add(body);
            notifyAll();
        }
        return answer;
    }

    /** Waits until every open transaction was checked, at most `ms`; whether they all were. */
    synchronized boolean awaitChecks(long ms) throws InterruptedException {
        long deadline = System.currentTimeMillis() + ms;
        while (!checked.containsAll(open)) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                return false;
            }
            wait(left);
        }
        return true;
    }
}
