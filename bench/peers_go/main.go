// Command peers_go is the Go client's side of bench/peers.py, printing one JSON line:
//   - publish (default): JetStream publishes with a window of acks outstanding, for a number of seconds;
//   - consume: a durable pull consumer fetching a number of stored messages, 256 at a time, acking the
//     last of each fetch (AckAll), as the nats-py consumer of the bench does.
//
// It is built by peers.py in GOPATH mode against the nats.go sources Debian packages
// (golang-github-nats-io-go-nats-dev), so it needs no module download.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

func main() {
	url := flag.String("url", nats.DefaultURL, "server URL")
	subject := flag.String("subject", "bench", "subject the stream stores")
	window := flag.Int("window", 256, "publishes awaiting their ack at once")
	seconds := flag.Float64("seconds", 3, "how long to publish")
	size := flag.Int("size", 1024, "body bytes")
	consume := flag.Int("consume", 0, "read this many stored messages instead of publishing")
	durable := flag.String("durable", "bench-go", "durable name of the pull consumer")
	flag.Parse()

	nc, err := nats.Connect(*url)
	if err != nil {
		fail("connect", err)
	}
	defer nc.Close()
	if *consume > 0 {
		report(pull(nc, *subject, *durable, *consume))
		return
	}
	report(publish(nc, *subject, *window, *seconds, *size))
}

func publish(nc *nats.Conn, subject string, window int, seconds float64, size int) map[string]any {
	var failed int64
	onError := func(_ nats.JetStream, _ *nats.Msg, _ error) { atomic.AddInt64(&failed, 1) }
	// PublishAsyncMaxPending makes PublishAsync wait while `window` acks are outstanding: the same
	// window as the Python clients' 256 concurrent awaited publishes.
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(window), nats.PublishAsyncErrHandler(onError))
	if err != nil {
		fail("jetstream", err)
	}
	body := make([]byte, size)
	for i := range body {
		body[i] = 'x'
	}
	start := time.Now()
	deadline := start.Add(time.Duration(seconds * float64(time.Second)))
	sent := int64(0)
	for time.Now().Before(deadline) {
		if _, err := js.PublishAsync(subject, body); err != nil {
			fail("publish", err)
		}
		sent++
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		fail("drain", fmt.Errorf("%d publishes still unacknowledged after 30 s", js.PublishAsyncPending()))
	}
	return map[string]any{"msgs": sent - atomic.LoadInt64(&failed), "failed": atomic.LoadInt64(&failed),
		"elapsed": time.Since(start).Seconds()}
}

func pull(nc *nats.Conn, subject string, durable string, total int) map[string]any {
	js, err := nc.JetStream()
	if err != nil {
		fail("jetstream", err)
	}
	sub, err := js.PullSubscribe(subject, durable, nats.AckAll())
	if err != nil {
		fail("subscribe", err)
	}
	seen := 0
	start := time.Now()
	for seen < total {
		want := total - seen
		if want > 256 {
			want = 256
		}
		msgs, err := sub.Fetch(want, nats.MaxWait(10*time.Second))
		if err != nil {
			fail("fetch", err)
		}
		seen += len(msgs)
		if err := msgs[len(msgs)-1].Ack(); err != nil {
			fail("ack", err)
		}
	}
	return map[string]any{"msgs": seen, "failed": 0, "elapsed": time.Since(start).Seconds()}
}

func report(out map[string]any) {
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("report", err)
	}
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "peers_go: %s: %v\n", what, err)
	os.Exit(1)
}
