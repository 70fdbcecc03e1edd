package mqref;

import java.util.Arrays;
import java.util.Map;

/** Latency percentiles without extra dependencies. */
final class Stats {
    private Stats() {
    }

    /** Adds p50_us / p99_us over the measured (non-negative) nanosecond samples to the event. */
    static void percentiles(long[] nanos, Map<String, Object> event) {
        long[] a = Arrays.stream(nanos).filter(v -> v >= 0).sorted().toArray();
        event.put("latency_samples", a.length);
        if (a.length == 0) {
            return;
        }
        event.put("p50_us", pick(a, 0.50) / 1000);
        event.put("p99_us", pick(a, 0.99) / 1000);
        event.put("max_us", a[a.length - 1] / 1000);
    }

    /** Nearest-rank percentile of a sorted array. */
    private static long pick(long[] sorted, double q) {
        int rank = (int) Math.ceil(q * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }
}
