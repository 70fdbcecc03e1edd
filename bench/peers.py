"""Our producer and consumer next to NATS JetStream (file storage) in the same run; one line per pair.

Starts a real `mq namesrv` + `mq broker` (ASYNC_FLUSH) and a `nats-server -js` with file storage
in a temp directory, both on 127.0.0.1, and measures 1 KiB messages, best of --repeat:
  publish  our Producer, async sends with 256 in flight and auto-batching on, against nats-py
           JetStream publishes with 256 in flight (each awaits its stored ack), both split over
           --clients processes (default 1: one client each; on 2 cores a second client process
           takes CPU from the server under test), both on the same client loop (benchsupport.py)
  consume  our PushConsumer reading the backlog the publish runs left, against a nats-py durable
           pull consumer fetching 256 at a time and acking the last of each fetch (AckPolicy.ALL,
           the counterpart of our consumer's offset commit); the same number of messages each, a
           fresh group / durable per run
           and, where `go` is on PATH, the Go client (peers_go/main.go): nats.go JetStream async
           publishes with at most 256 acks outstanding (PublishAsyncMaxPending), split over the same
           --clients processes; without Go the bench says it did not measure it
The ratio is mq / peer; the targets are against nats-py (the issue's Python peer), the Go line is
reported beside them. The publish line also gives the broker's CPU per message (user and system) in
each of our runs: the system part is mostly the first touch of fresh page-cache pages, which varies
with the machine's memory (on this VM 2-3 us per message from one run to the next), and moves our
figure more than anything in our code does.

Not a CI bench: it installs what it needs when missing and says so, `nats-server` with apt-get,
`nats-py` with pip into this interpreter (a bench-time tool, not a project dependency) and, when Go is
present, Debian's nats.go sources (golang-github-nats-io-go-nats-dev) with apt-get, which the Go
client is built against in GOPATH mode: no module download.

Usage: .venv/bin/python bench/peers.py [--seconds 3] [--clients 1] [--repeat 3]
Targets: publish >= 120,000 msgs/s and >= 3x nats-py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import broker_send
import client_consume
import client_produce
from benchsupport import client_loop, namesrv_and_broker, run_client, run_processes, throughput

SUBJECT = "bench"
STREAM = "BENCH"
FETCH = 256
PUBLISH_TARGET = 120_000
GO_CLIENT = Path(__file__).resolve().parent / "peers_go" / "main.go"
#: Where Debian's golang-*-dev packages put Go sources: a GOPATH the Go client builds against.
DEBIAN_GOPATH = Path("/usr/share/gocode")
NATS_GO_PACKAGE = "golang-github-nats-io-go-nats-dev"


def ensure_nats_server() -> str:
    """Path of nats-server, installed with apt-get (saying so) when missing."""
    found = shutil.which("nats-server")
    if found:
        return found
    print("peers: nats-server not found; installing the Debian package with apt-get", flush=True)
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "nats-server"]):
        subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
    found = shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin:/usr/bin")
    if not found:
        raise SystemExit("peers: nats-server could not be installed (apt-get install nats-server failed)")
    return found


def ensure_nats_py() -> None:
    """nats-py importable in this interpreter, installed with pip (saying so) when missing."""
    try:
        import nats  # noqa: F401
    except ImportError:
        print("peers: nats-py not installed; installing it with pip for this bench (not a project dependency)",
              flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "nats-py"], check=True)


def build_go_client(out_dir: Path) -> tuple[Path | None, str]:
    """The Go client built into `out_dir`, or None and why it was not (no Go, no nats.go, a failed build)."""
    go = shutil.which("go")
    if go is None:
        return None, "no go on PATH"
    sources = DEBIAN_GOPATH / "src/github.com/nats-io/nats.go"
    if not sources.is_dir():
        print(f"peers: nats.go sources not found; installing the Debian package {NATS_GO_PACKAGE} with apt-get",
              flush=True)
        for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", NATS_GO_PACKAGE]):
            subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
        if not sources.is_dir():
            return None, f"nats.go sources missing (apt-get install {NATS_GO_PACKAGE} failed)"
    binary = out_dir / "peers_go"
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": str(DEBIAN_GOPATH)}
    built = subprocess.run([go, "build", "-o", str(binary), str(GO_CLIENT)], env=env, capture_output=True,
                           text=True, check=False)
    if built.returncode != 0:
        return None, f"go build failed: {(built.stderr.strip().splitlines() or ['no output'])[-1]}"
    return binary, ""


def run_go(binary: Path, url: str, *args: str, clients: int = 1, timeout: float = 120.0) -> list[dict]:
    """`clients` Go client processes at once with `args`; the JSON line each printed."""
    argv = [str(binary), "-url", url, "-subject", SUBJECT, *args]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(clients)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=timeout)
        if proc.returncode != 0:
            raise SystemExit(f"peers: the Go client failed ({proc.returncode}): {err.strip()}")
        result = json.loads(out)
        if result["failed"]:
            raise SystemExit(f"peers: {result['failed']} of the Go client's publishes failed")
        results.append({**result, "lat": []})
    return results


def go_publish(binary: Path, url: str, window: int, seconds: float, clients: int) -> dict:
    """Go clients publishing at once, `window` acks outstanding each; their figures as throughput()'s."""
    return throughput(run_go(binary, url, "-window", str(window), "-seconds", str(seconds),
                             "-size", str(len(broker_send.BODY)), clients=clients, timeout=seconds + 60))


def go_consume(binary: Path, url: str, durable: str, total: int) -> float:
    """Seconds the Go durable pull consumer needs to fetch `total` stored messages."""
    return run_go(binary, url, "-consume", str(total), "-durable", durable)[0]["elapsed"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def nats_server(binary: str) -> Iterator[str]:
    """A JetStream server with file storage in a temp directory; yields its URL once it logs ready."""
    with tempfile.TemporaryDirectory(prefix="mq-bench-nats-") as tmp:
        port = free_port()
        proc = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", tmp],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                if "Server is ready" in line:
                    break
            else:
                raise SystemExit(f"peers: nats-server exited with {proc.wait()} before it was ready")
            yield f"nats://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(10)


async def nats_publish(url: str, inflight: int, seconds: float) -> dict:
    import nats

    nc = await nats.connect(url)
    js = nc.jetstream()
    msgs = 0
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal msgs
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            await js.publish(SUBJECT, broker_send.BODY)
            latencies.append(time.perf_counter() - t0)
            msgs += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(inflight)))
    elapsed = time.perf_counter() - t0
    await nc.close()
    return {"msgs": msgs, "elapsed": elapsed, "lat": latencies}


def _nats_child(args: tuple, out: mp.Queue) -> None:
    out.put(run_client(nats_publish(*args)))


async def nats_setup(url: str) -> None:
    import nats
    from nats.js.api import StorageType

    nc = await nats.connect(url)
    await nc.jetstream().add_stream(name=STREAM, subjects=[SUBJECT], storage=StorageType.FILE)
    await nc.close()


async def nats_consume(url: str, durable: str, total: int) -> float:
    """Seconds a durable pull consumer needs to fetch `total` stored messages."""
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig

    nc = await nats.connect(url)
    sub = await nc.jetstream().pull_subscribe(SUBJECT, durable=durable,
                                              config=ConsumerConfig(ack_policy=AckPolicy.ALL))
    seen = 0
    t0 = time.perf_counter()
    while seen < total:
        batch = await sub.fetch(min(FETCH, total - seen), timeout=10)
        seen += len(batch)
        await batch[-1].ack()
    elapsed = time.perf_counter() - t0
    await nc.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--clients", type=int, default=1,
                    help="client processes per side for publish (1: one client with 256 in flight)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the best is reported (shared hosts)")
    ap.add_argument("--consume-max", type=int, default=150_000, help="messages read per consume run")
    args = ap.parse_args()
    binary = ensure_nats_server()
    ensure_nats_py()
    per = max(1, 256 // args.clients)
    ours_pub: list[dict] = []
    peer_pub: list[dict] = []
    go_pub: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="mq-bench-go-") as go_dir, \
            namesrv_and_broker(broker_send.TOPIC, broker_send.QUEUES) as (namesrv, broker), nats_server(binary) as url:
        go_client, go_missing = build_go_client(Path(go_dir))
        run_client(nats_setup(url))
        for _ in range(args.repeat):
            ours_pub.append(broker_send.with_cpu(broker.pid, args.seconds, lambda: client_produce.run_producer(
                namesrv.addr, "async", 256, args.seconds, 1, args.clients, True)))
            peer_pub.append(throughput(run_processes(_nats_child, (url, per, args.seconds), args.clients,
                                                     timeout=args.seconds + 60)))
            if go_client is not None:
                go_pub.append(go_publish(go_client, url, per, args.seconds, args.clients))
        # every run left its messages; each consume run reads the same count from the first offset
        total = min(args.consume_max, int(min(sum(r["msgs_s"] for r in ours_pub),
                                              sum(r["msgs_s"] for r in peer_pub)) * args.seconds * 0.95))
        ours_con = max(total / run_client(client_consume.consume_backlog(namesrv.addr, total, 120,
                                                                          f"CG_BENCH_PEERS_{i}"))
                       for i in range(args.repeat))
        peer_con = max(total / run_client(nats_consume(url, f"bench{i}", total)) for i in range(args.repeat))
        go_con = max(total / go_consume(go_client, url, f"bench-go{i}", total)
                     for i in range(args.repeat)) if go_client is not None else 0.0
    best = max(ours_pub, key=lambda r: r["msgs_s"])
    pub, peer = best["msgs_s"], max(r["msgs_s"] for r in peer_pub)
    print(f"peers publish (async, 256 in flight, {args.clients} client process(es) each, client loop {client_loop()}) | mq Producer auto-batching {pub:,.0f} msgs/s | nats-py "
          f"JetStream file {peer:,.0f} msgs/s | ratio {pub / peer:.2f} (targets >= {PUBLISH_TARGET:,} msgs/s "
          f"and >= 3.00: {'met' if pub >= PUBLISH_TARGET and pub >= 3 * peer else 'missed'}) | broker CPU in that run: "
          f"user {best['cpu_user_us']:.1f} + system {best['cpu_sys_us']:.1f} us/msg (runs: "
          + ", ".join(f"{r['msgs_s']:,.0f} at {r['cpu_sys_us']:.1f}" for r in ours_pub) + " us/msg system)")
    print(f"peers consume ({total:,} stored msgs) | mq PushConsumer {ours_con:,.0f} msgs/s | nats-py pull "
          f"{peer_con:,.0f} msgs/s | ratio {ours_con / peer_con:.2f}")
    if go_client is not None:
        go = max(r["msgs_s"] for r in go_pub)
        print(f"peers publish, Go client (async, 256 acks outstanding, {args.clients} client process(es) each) | "
              f"mq Producer auto-batching {pub:,.0f} msgs/s | nats.go JetStream file {go:,.0f} msgs/s | ratio "
              f"{pub / go:.2f} (reported beside the targets, which are against nats-py)")
        print(f"peers consume, Go client ({total:,} stored msgs) | mq PushConsumer {ours_con:,.0f} msgs/s | nats.go "
              f"pull {go_con:,.0f} msgs/s | ratio {ours_con / go_con:.2f}")
    else:
        print(f"peers: Go client not measured ({go_missing})")


if __name__ == "__main__":
    main()
