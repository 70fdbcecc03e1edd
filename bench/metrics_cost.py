"""What the broker's own Prometheus metrics cost the send path: a broker with metricsExporterType=PROM scraped
every second, against one with DISABLE, one summary line.

Two real `mq namesrv` + `mq broker` pairs (ASYNC_FLUSH), one of them serving its metrics (mqtools/server/broker/metrics.py)
and scraped once a second by a thread of this process while it is measured (a scrape a second is fifteen
times Prometheus's usual rate). One client process (bench/client_produce.py's driver) sends 1 KiB messages,
sync with 64 in flight and async with 256 in flight, to each broker in turns (A, B, A, B...), keeping each
side's best of --repeat runs. The ratio is with-metrics over without. Target (issue "Where operators already
look"): at most 3 % cost, ratio >= 0.97.

Usage: .venv/bin/python bench/metrics_cost.py [--seconds 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import threading
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import broker_send
import client_produce
from benchsupport import best_of_ab, client_loop, namesrv_and_broker, run_client, run_processes, throughput
from support.promsupport import free_port

SCRAPE_EVERY_S = 1.0


def _child(args: tuple, out: mp.Queue) -> None:
    namesrv, kind, inflight, seconds = args
    out.put(run_client(client_produce.drive_producer(namesrv, kind, inflight, seconds, 1, False, False)))


def run(namesrv: str, kind: str, inflight: int, seconds: float, scrape_url: str | None) -> dict:
    stop = threading.Event()
    scrapes = [0]

    def scrape() -> None:
        while not stop.wait(SCRAPE_EVERY_S):
            with urllib.request.urlopen(scrape_url, timeout=5) as answer:  # type: ignore[arg-type]
                answer.read()
            scrapes[0] += 1

    scraper = threading.Thread(target=scrape, daemon=True) if scrape_url else None
    if scraper:
        scraper.start()
    try:
        got = throughput(run_processes(_child, (namesrv, kind, inflight, seconds), 1, timeout=seconds + 60))
    finally:
        stop.set()
        if scraper:
            scraper.join()
    if scrape_url:
        assert scrapes[0] >= seconds // SCRAPE_EVERY_S - 1, f"only {scrapes[0]} scrapes"
    return got


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cases = {"sync64": ("send", 64), "async256": ("async", 256)}
    port = free_port()
    parts = []
    with namesrv_and_broker(broker_send.TOPIC, broker_send.QUEUES) as (plain_ns, _plain), \
            namesrv_and_broker(broker_send.TOPIC, broker_send.QUEUES, metricsExporterType="PROM",
                               metricsPromExporterHost="127.0.0.1", metricsPromExporterPort=str(port)) as (prom_ns, _b):
        url = f"http://127.0.0.1:{port}/metrics"
        for name, (kind, inflight) in cases.items():
            off, on = best_of_ab(lambda metrics, k=kind, n=inflight: run(
                prom_ns.addr if metrics else plain_ns.addr, k, n, args.seconds, url if metrics else None), args.repeat)
            parts.append(f"{name}: without {off['msgs_s']:,.0f} msgs/s p99 {off['p99_ms']:.2f} ms, with metrics "
                         f"{on['msgs_s']:,.0f} msgs/s p99 {on['p99_ms']:.2f} ms, ratio {on['msgs_s'] / off['msgs_s']:.2f}")
    print(f"metrics_cost (best of {args.repeat}, scraped every {SCRAPE_EVERY_S:g} s, client loop {client_loop()}) | "
          + " | ".join(parts) + " | target: ratio >= 0.97")


if __name__ == "__main__":
    main()
