package mqref;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/** The produce command: sync, async, oneway, batch and orderly sends of --count messages. */
final class Produce {
    private final Opts o;
    private final String topic;
    private final int count;
    private final String tag;
    private final String keysPrefix;
    private final int bodySize;
    private final int delayLevel;
    private final int orderKeys;
    private final Map<String, String> props;
    private final long timeoutMs;
    private final int retries;
    private final boolean quiet;
    private final long[] latency;
    private final AtomicInteger ok = new AtomicInteger();
    private final AtomicInteger notOk = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();
    private DefaultMQProducer producer;

    private Produce(Opts o) {
        this.o = o;
        topic = o.required("topic");
        count = o.integer("count", 1);
        tag = o.str("tag", null);
        keysPrefix = o.str("keys-prefix", "key-");
        bodySize = o.integer("body-size", 0);
        delayLevel = o.integer("delay-level", 0);
        orderKeys = Math.max(1, o.integer("order-keys", 4));
        props = o.props("props");
        timeoutMs = o.lng("send-timeout-ms", 3000);
        retries = o.integer("retries", 2);
        quiet = o.flag("quiet");
        latency = new long[count];
        Arrays.fill(latency, -1);
    }

    static int run(Opts o) throws Exception {
        return new Produce(o).go();
    }

    private int go() throws Exception {
        String mode = o.str("mode", "sync");
        producer = new DefaultMQProducer(o.str("group", "PG_JAVA_REF"), o.rpcHook(), o.trace(), null);
        o.apply(producer);
        producer.setSendMsgTimeout((int) timeoutMs);
        producer.setRetryTimesWhenSendFailed(retries);
        producer.setRetryTimesWhenSendAsyncFailed(retries);
        producer.start();
        long t0 = System.nanoTime();
        switch (mode) {
            case "sync":
                sync(Math.max(1, o.integer("threads", 1)));
                break;
            case "async":
                async(Math.max(1, o.integer("in-flight", 256)));
                break;
            case "oneway":
                oneway();
                break;
            case "batch":
                batch(Math.max(1, o.integer("batch-size", 32)));
                break;
            case "orderly":
                orderly();
                break;
            default:
                throw new IllegalArgumentException("unknown --mode " + mode);
        }
        long elapsedNs = System.nanoTime() - t0;
        Thread.sleep(o.integer("linger-ms", 0));  // e.g. for the trace dispatcher to send its batch
        producer.shutdown();
        Map<String, Object> done = Out.event("done");
        done.put("sent", ok.get());
        done.put("failed", failed.get());
        if (notOk.get() > 0) {
            done.put("not_send_ok", notOk.get());
        }
        done.put("elapsed_ms", elapsedNs / 1_000_000);
        done.put("msgs_per_s", elapsedNs > 0 ? Math.round(ok.get() * 1e9 / elapsedNs) : 0);
        if (o.flag("latency")) {
            Stats.percentiles(latency, done);
        }
        Out.finish(done);
        return failed.get() > 0 ? 2 : 0;
    }

    /** Message i as the options describe it. */
    private Message build(int i) {
        Message m = new Message(topic, Msgs.body(i, bodySize));
        if (tag != null && !tag.isEmpty()) {
            m.setTags(tag);
        }
        m.setKeys(keysPrefix + i);
        for (Map.Entry<String, String> e : props.entrySet()) {
            m.putUserProperty(e.getKey(), e.getValue());
        }
        if (delayLevel > 0) {
            m.setDelayTimeLevel(delayLevel);
        }
        return m;
    }

    private void sent(int i, Message m, SendResult r, String msgId, String offsetMsgId, Map<String, Object> extra) {
        ok.incrementAndGet();
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            notOk.incrementAndGet();
        }
        if (quiet) {
            return;
        }
        Map<String, Object> e = Out.event("sent");
        e.put("i", i);
        e.put("status", r.getSendStatus().name());
        e.put("msgId", msgId);
        e.put("offsetMsgId", offsetMsgId);
        if (r.getMessageQueue() != null) {
            e.put("broker", r.getMessageQueue().getBrokerName());
            e.put("queueId", r.getMessageQueue().getQueueId());
        }
        e.put("queueOffset", r.getQueueOffset());
        e.put("key", m.getKeys());
        e.put("tag", m.getTags());
        if (extra != null) {
            e.putAll(extra);
        }
        Out.emit(e);
    }

    private void sent(int i, Message m, SendResult r) {
        sent(i, m, r, r.getMsgId(), r.getOffsetMsgId(), null);
    }

    private void failed(int i, Throwable t) {
        failed.incrementAndGet();
        Out.emit("send_failed", "i", i, "error", Out.describe(t));
    }

    private void sync(int threads) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<?>> fs = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int first = t;
            fs.add(pool.submit(() -> {
                for (int i = first; i < count; i += threads) {
                    Message m = build(i);
                    long s = System.nanoTime();
                    try {
                        SendResult r = producer.send(m, timeoutMs);
                        latency[i] = System.nanoTime() - s;
                        sent(i, m, r);
                    } catch (Exception e) {
                        failed(i, e);
                    }
                }
            }));
        }
        for (Future<?> f : fs) {
            f.get();
        }
        pool.shutdown();
    }

    private void async(int inFlight) throws Exception {
        Semaphore sem = new Semaphore(inFlight);
        CountDownLatch latch = new CountDownLatch(count);
        AtomicIntegerArray state = new AtomicIntegerArray(count); // 0 outstanding, 1 answered
        long bound = timeoutMs * (retries + 1L) + 30_000L;
        for (int n = 0; n < count; n++) {
            final int i = n;
            if (!sem.tryAcquire(bound, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("async: no callback freed an in-flight slot within " + bound + " ms");
            }
            Message m = build(i);
            long s = System.nanoTime();
            SendCallback cb = new SendCallback() {
                @Override
                public void onSuccess(SendResult r) {
                    if (state.compareAndSet(i, 0, 1)) {
                        latency[i] = System.nanoTime() - s;
                        sent(i, m, r);
                        sem.release();
                        latch.countDown();
                    }
                }

                @Override
                public void onException(Throwable e) {
                    if (state.compareAndSet(i, 0, 1)) {
                        failed(i, e);
                        sem.release();
                        latch.countDown();
                    }
                }
            };
            try {
                producer.send(m, cb, timeoutMs);
            } catch (Exception e) {
                cb.onException(e);
            }
        }
        if (!latch.await(bound, TimeUnit.MILLISECONDS)) {
            for (int i = 0; i < count; i++) {
                if (state.compareAndSet(i, 0, 1)) {
                    failed(i, new IllegalStateException("no send callback within " + bound + " ms"));
                }
            }
        }
    }

    private void oneway() {
        for (int i = 0; i < count; i++) {
            try {
                producer.sendOneway(build(i));
                ok.incrementAndGet();
                if (!quiet) {
                    Out.emit("sent", "i", i, "status", "ONEWAY");
                }
            } catch (Exception e) {
                failed(i, e);
            }
        }
    }

    private void batch(int size) {
        for (int start = 0; start < count; start += size) {
            int end = Math.min(count, start + size);
            List<Message> msgs = new ArrayList<>();
            for (int i = start; i < end; i++) {
                msgs.add(build(i));
            }
            SendResult r;
            try {
                r = producer.send(msgs, timeoutMs);
            } catch (Exception e) {
                for (int i = start; i < end; i++) {
                    failed(i, e);
                }
                continue;
            }
            String[] ids = split(r.getMsgId());
            String[] offIds = split(r.getOffsetMsgId());
            for (int j = 0; j < msgs.size(); j++) {
                Map<String, Object> extra = new java.util.LinkedHashMap<>();
                extra.put("batchQueueOffset", r.getQueueOffset());
                extra.put("queueOffset", r.getQueueOffset() + j);
                extra.put("batchIndex", j);
                sent(start + j, msgs.get(j), r, j < ids.length ? ids[j] : null,
                        j < offIds.length ? offIds[j] : null, extra);
            }
        }
    }

    private static String[] split(String s) {
        return s == null ? new String[0] : s.split(",");
    }

    private void orderly() {
        MessageQueueSelector selector = (mqs, msg, arg) -> mqs.get(Math.abs(arg.hashCode()) % mqs.size());
        for (int i = 0; i < count; i++) {
            Message m = build(i);
            String shardingKey = "ok-" + (i % orderKeys);
            long s = System.nanoTime();
            try {
                SendResult r = producer.send(m, selector, shardingKey, timeoutMs);
                latency[i] = System.nanoTime() - s;
                sent(i, m, r, r.getMsgId(), r.getOffsetMsgId(), Map.of("shardingKey", shardingKey));
            } catch (Exception e) {
                failed(i, e);
            }
        }
    }
}
