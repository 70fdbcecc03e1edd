package mqref;

import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Counts deliveries and distinct successfully consumed messages (by msgId, or with --distinct-by offset by
 * queue offset: a bit per offset instead of an id per message, so a 10-million backlog fits in a few MB);
 * releases a latch at --expect.
 */
final class Receipts {
    private final int expect;
    private final boolean quiet;
    private final boolean printProps;
    private final boolean byOffset;
    private final Set<String> distinct = ConcurrentHashMap.newKeySet();
    private final Map<String, BitSet> offsets = new ConcurrentHashMap<>();
    private final AtomicLong distinctOffsets = new AtomicLong();
    private final AtomicLong deliveries = new AtomicLong();
    private final AtomicLong firstNs = new AtomicLong(-1);
    private final AtomicLong lastNs = new AtomicLong(-1);
    private final CountDownLatch reached = new CountDownLatch(1);

    Receipts(Opts o) {
        expect = o.integer("expect", 0);
        quiet = o.flag("quiet");
        printProps = o.flag("print-props");
        byOffset = "offset".equals(o.str("distinct-by", "msgId"));
    }

    int expect() {
        return expect;
    }

    /** Records one delivered batch (failed: it will be answered with a retry status). */
    void record(List<MessageExt> msgs, MessageQueue mq, boolean failed) {
        for (MessageExt m : msgs) {
            long now = System.nanoTime();
            firstNs.compareAndSet(-1, now);
            lastNs.set(now);
            deliveries.incrementAndGet();
            if (!quiet) {
                Out.emit(Msgs.received(m, mq, printProps, failed));
            }
            if (!failed) {
                if (byOffset) {
                    markOffset(mq, m.getQueueOffset());
                } else {
                    distinct.add(m.getMsgId());
                }
                if (expect > 0 && distinctCount() >= expect) {
                    reached.countDown();
                }
            }
        }
    }

    /** Waits until --expect distinct messages were consumed; false on timeout. */
    boolean await(long timeoutMs) throws InterruptedException {
        return reached.await(timeoutMs, TimeUnit.MILLISECONDS);
    }

    /** Releases {@link #await} (used when stdin closes). */
    void release() {
        reached.countDown();
    }

    int distinctCount() {
        return byOffset ? (int) distinctOffsets.get() : distinct.size();
    }

    private void markOffset(MessageQueue mq, long offset) {
        BitSet bits = offsets.computeIfAbsent(mq.getBrokerName() + "/" + mq.getTopic() + "/" + mq.getQueueId(),
                k -> new BitSet());
        synchronized (bits) {
            if (bits.get((int) offset)) {
                return;
            }
            bits.set((int) offset);
        }
        distinctOffsets.incrementAndGet();
    }

    /**
     * Prints the done event (counters, and "timeout" when the wait ran out) and gives the exit code:
     * 0, or 3 on a timeout.
     */
    int finish(boolean finished) {
        Map<String, Object> done = Out.event("done");
        fill(done);
        if (!finished) {
            done.put("timeout", true);
        }
        Out.finish(done);
        return finished ? 0 : 3;
    }

    private void fill(Map<String, Object> done) {
        done.put("received", deliveries.get());
        done.put("distinct", distinctCount());
        long span = lastNs.get() - firstNs.get();
        if (deliveries.get() > 1 && span > 0) {
            done.put("msgs_per_s", Math.round((deliveries.get() - 1) * 1e9 / span));
        }
    }

    /** With --expect 0: a daemon thread that releases the wait when stdin reaches EOF. */
    void releaseOnStdinEof() {
        Thread t = new Thread(() -> {
            try {
                byte[] buf = new byte[4096];
                while (System.in.read(buf) >= 0) {
                    // discard input; only EOF matters
                }
            } catch (Exception ignored) {
                // treat a broken stdin as closed
            }
            release();
        }, "mqref-stdin");
        t.setDaemon(true);
        t.start();
    }
}
