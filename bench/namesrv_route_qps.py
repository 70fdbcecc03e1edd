"""GET_ROUTEINFO_BY_TOPIC round trips per second against a name server, vs a bare echo server.

Usage: python bench/namesrv_route_qps.py [-n HOST:PORT] [--seconds 3]

Without -n it starts its own `mq namesrv start` on an ephemeral port. It registers one
broker with a topic, then runs closed-loop clients (each connection: send one request,
wait for the whole answer, repeat) with 1 and 16 concurrent connections, alternating
the two servers over three rounds and keeping each one's best. The baseline is
a bare asyncio echo server in its own process, driven by the same client with the same
request bytes: the Python request/response ceiling on this machine. The client only
frames bytes (no command decoding), so the server's cost dominates both figures.

Prints one summary line; the target is a ratio >= 0.6 to the echo ceiling.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from mqtools.remoting.bodies import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import RegisterBrokerRequestHeader

TOPIC = "BENCH_ROUTE_TOPIC"
ROUNDS = 3

ECHO_SERVER = r"""
import asyncio, sys
class Echo(asyncio.Protocol):
    def connection_made(self, t): self.t = t
    def data_received(self, d): self.t.write(d)
async def main():
    srv = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", 0)
    print("READY echo 127.0.0.1:%d" % srv.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
try:
    import uvloop
    uvloop.run(main())
except ImportError:
    asyncio.run(main())
"""


class RoundTrips(asyncio.Protocol):
    """Closed loop over one connection: one request in flight, count complete answers."""

    def __init__(self, request: bytes, stop_at: float) -> None:
        self.request = request
        self.stop_at = stop_at
        self.buf = bytearray()
        self.count = 0
        self.done: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 4:
            (length,) = struct.unpack_from(">i", self.buf)
            if len(self.buf) < 4 + length:
                return
            del self.buf[: 4 + length]
            self.count += 1
            if time.perf_counter() >= self.stop_at:
                if not self.done.done():
                    self.done.set_result(self.count)
                return
            self.transport.write(self.request)  # type: ignore[attr-defined]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(ConnectionError(f"connection lost after {self.count} round trips"))


async def measure(host: str, port: int, request: bytes, connections: int, seconds: float) -> float:
    loop = asyncio.get_running_loop()
    start = time.perf_counter()
    stop_at = start + seconds
    protos = []
    for _ in range(connections):
        _t, proto = await loop.create_connection(lambda: RoundTrips(request, stop_at), host, port)
        protos.append(proto)
    counts = await asyncio.gather(*(p.done for p in protos))
    elapsed = time.perf_counter() - start
    for p in protos:
        p.transport.close()
    return sum(counts) / elapsed


def start_process(args: list[str]) -> tuple[subprocess.Popen, str, int]:
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    for line in proc.stdout:
        if line.startswith("READY "):
            host, port = line.split()[2].rsplit(":", 1)
            return proc, host, int(port)
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise RuntimeError(f"{args} did not print READY")


async def register(client: RemotingClient, addr: str) -> None:
    header = RegisterBrokerRequestHeader(broker_name="bench-broker", broker_addr="127.0.0.1:10911",
                                         cluster_name="BenchCluster", ha_server_addr="127.0.0.1:10912",
                                         broker_id=0)
    topics = {t: TopicConfig(t, 8, 8) for t in (TOPIC, "TBW102")}
    body = RegisterBrokerBody(TopicConfigSerializeWrapper(topics, DataVersion(1, 1))).to_json()
    resp = await client.invoke(addr, RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), body), 10)
    if resp.code != 0:
        raise RuntimeError(f"registration failed: {resp.code} {resp.remark}")


async def run(namesrv: str | None, seconds: float) -> str:
    procs: list[subprocess.Popen] = []
    tmp = tempfile.TemporaryDirectory()
    try:
        if namesrv is None:
            ns, host, port = start_process([sys.executable, "-m", "mqtools.cli.main", "namesrv", "start",
                                            "--listen-port", "0", "--host", "127.0.0.1", "--store-dir", tmp.name])
            procs.append(ns)
            namesrv = f"{host}:{port}"
        ns_host, ns_port = namesrv.rsplit(":", 1)
        echo, echo_host, echo_port = start_process([sys.executable, "-c", ECHO_SERVER])
        procs.append(echo)
        broker = RemotingClient()
        await register(broker, namesrv)  # the connection stays open for the whole run
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}).encode()
        check = await broker.invoke(namesrv, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                                     {"topic": TOPIC}), 10)
        if check.code != 0:
            raise RuntimeError(f"route query failed: {check.code} {check.remark}")
        await measure(ns_host, int(ns_port), request, 4, 0.5)  # warm-up
        await measure(echo_host, echo_port, request, 4, 0.5)
        parts = []
        for conns in (1, 16):
            # Alternate the two servers and keep each one's best round: load from other
            # processes on the machine then hurts neither figure more than the other.
            route = ceiling = 0.0
            for _ in range(ROUNDS):
                route = max(route, await measure(ns_host, int(ns_port), request, conns, seconds / ROUNDS))
                ceiling = max(ceiling, await measure(echo_host, echo_port, request, conns, seconds / ROUNDS))
            parts.append(f"c={conns}: {route:,.0f} rps vs echo {ceiling:,.0f} rps, ratio {route / ceiling:.2f}")
        await broker.close()
        return f"namesrv_route_qps: {'; '.join(parts)} (target ratio >= 0.60)"
    finally:
        for proc in procs:
            proc.terminate()
            with suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        tmp.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--namesrv", help="HOST:PORT of a running name server (default: start one)")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per server and concurrency")
    args = parser.parse_args()
    try:
        import uvloop

        line = uvloop.run(run(args.namesrv, args.seconds))
    except ImportError:
        line = asyncio.run(run(args.namesrv, args.seconds))
    print(line)


if __name__ == "__main__":
    main()
