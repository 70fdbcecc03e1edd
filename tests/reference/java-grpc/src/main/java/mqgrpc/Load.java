package mqgrpc;

import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * The load command (bench/proxy_grpc.py): async sends of --size byte bodies with --inflight outstanding for
 * --seconds, after one sync send (routes and settings before the clock starts); done{sent,failed,elapsedMs}.
 */
final class Load {
    private Load() {
    }

    static int run(Opts o) throws Exception {
        String topic = o.required("topic");
        long runMs = o.lng("seconds", 10) * 1000;
        int inflight = o.integer("inflight", 64);
        ClientServiceProvider provider = Clients.provider();
        Message m = provider.newMessageBuilder().setTopic(topic).setBody(new byte[o.integer("size", 1024)]).build();
        AtomicLong sent = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        try (Producer p = provider.newProducerBuilder().setClientConfiguration(Clients.config(o)).setTopics(topic)
                .build()) {
            p.send(m);
            Semaphore gate = new Semaphore(inflight);
            long began = System.currentTimeMillis();
            while (System.currentTimeMillis() - began < runMs) {
                gate.acquire();
                p.sendAsync(m).whenComplete((receipt, error) -> {
                    (error == null ? sent : failed).incrementAndGet();
                    gate.release();
                });
            }
            gate.acquire(inflight);
            long elapsed = System.currentTimeMillis() - began;
            Out.finish(Out.event("done", "sent", sent.get() + 1, "failed", failed.get(), "elapsedMs", elapsed));
        }
        return failed.get() == 0 ? 0 : 2;
    }
}
