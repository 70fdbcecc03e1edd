"""Broker send/pull throughput through the real remoting path; prints one summary line.

Starts a real `mq broker` (ASYNC_FLUSH, temp store, no name server) and, as the baseline,
a Python "ceiling" server: our RemotingServer answering SEND_MESSAGE_V2 with a canned
response and doing nothing else. Each case drives SEND_MESSAGE_V2 (1 KiB bodies) from a
client process with 1 and 64 requests in flight, SEND_BATCH_MESSAGE with 32 messages per
request, and PULL_MESSAGE of the stored messages. The ratio is broker msgs/s over ceiling
req/s at the same concurrency: how close the broker gets to what Python request/response
alone allows on this machine.

Each case also prints the server's CPU microseconds per message, the broker's against the canned
server's (`server cpu us/msg`): the ratio moves with the machine's load, CPU per message much less.

`send_keyed` is the same request whose properties carry a fresh UNIQ_KEY and WAIT, as every
producer's message does (the broker indexes the key): bench/client_produce.py's second baseline.

TLS: the broker runs in TLS permissive mode with a local CA's certificate (mq cluster up --tls's),
so the same broker serves the plain cases and the `tls_sync1`/`tls_sync64` cases, whose clients
connect with TLS; their ratio is TLS msgs/s over plain msgs/s at the same concurrency (target:
TLS costs at most 30%, ratio >= 0.70).

ACL: a second broker runs with aclEnable=true (one account, no white address), and the
`acl_sync1`/`acl_sync64` cases sign every request (mqtools.remoting.acl) against it. Load from
other work on a shared machine drifts more than ACL costs, so these cases alternate with plain
sends to the first broker in ACL_ROUNDS short rounds each; the ratio is the ACL rounds' msgs/s
over the interleaved plain rounds' (target: signing plus verification cost at most 15%, >= 0.85).
Each broker's CPU time per message over those rounds is printed too (`cpu us/msg`): it does not
drift with the machine's load as throughput does.

Usage: .venv/bin/python bench/broker_send.py [--seconds 3] [--clients 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import psutil
from benchsupport import client_loop, create_topic, run_client, run_processes, throughput
from support.mqproc import start_mq

from mqtools.cluster.certs import make_local_certificates
from mqtools.common.ids import UniqueKeyGenerator
from mqtools.common.properties import UNIQ_KEY, WAIT, properties_to_string
from mqtools.common.security import ClientSecurity, SessionCredentials, TlsClientOptions
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import PullMessageRequestHeader, SendMessageRequestHeader

BODY = b"x" * 1024
TOPIC = "BenchSend"
QUEUES = 8
ACL_KEY, ACL_SECRET = "benchkey1", "bench-secret-1"
ACL_ROUNDS = 4
ACL_YML = f"accounts:\n- accessKey: {ACL_KEY}\n  secretKey: {ACL_SECRET}\n  admin: true\n"

CEILING_SERVER = r'''
import asyncio, sys
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.headers import SendMessageResponseHeader
from mqtools.common.loop import run

async def main():
    server = RemotingServer("127.0.0.1", 0)
    ext = SendMessageResponseHeader(msg_id="7F00000100002A9F0000000000000000", queue_id=0, queue_offset=0).to_ext()
    def answer(conn, req):
        return req.response(ext_fields=dict(ext))
    for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        server.register(code, answer)
    await server.start()
    print(f"READY ceiling 127.0.0.1:{server.port}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

run(main())
'''


def send_cmd(queue_id: int, code: int = RequestCode.SEND_MESSAGE_V2, body: bytes = BODY, properties: str = ""
             ) -> RemotingCommand:
    h = SendMessageRequestHeader(
        producer_group="PG_BENCH", topic=TOPIC, default_topic="TBW102", default_topic_queue_nums=QUEUES,
        queue_id=queue_id, sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0, properties=properties)
    return RemotingCommand.request(code, h.to_v2(), body)


def keyed_properties(keys: UniqueKeyGenerator) -> str:
    """What every producer's message carries: a fresh UNIQ_KEY (which the broker indexes) and WAIT."""
    return properties_to_string({UNIQ_KEY: keys.next(), WAIT: "true"})


def batch_body(n: int) -> bytes:
    one = struct.pack(">iiiii", 20 + len(BODY) + 2, 0, 0, 0, len(BODY)) + BODY + struct.pack(">h", 0)
    return one * n


async def drive(addr: str, kind: str, inflight: int, seconds: float, batch: int, tls_ca: str | None = None,
                signed: bool = False) -> dict:
    """One client process: `inflight` workers, each one request at a time, for `seconds` (TLS with `tls_ca`,
    ACL-signed requests with `signed`)."""
    client = RemotingClient(security=ClientSecurity(SessionCredentials(ACL_KEY, ACL_SECRET) if signed else None,
                                                    TlsClientOptions(tls_ca) if tls_ca else None))
    latencies: list[float] = []
    msgs = 0
    errors = 0
    body = batch_body(batch) if kind == "batch" else BODY
    code = RequestCode.SEND_BATCH_MESSAGE if kind == "batch" else RequestCode.SEND_MESSAGE_V2
    keys = UniqueKeyGenerator() if kind == "send_keyed" else None
    await client.connection(addr)
    deadline = time.perf_counter() + seconds

    async def worker(w: int) -> None:
        nonlocal msgs, errors
        q = w % QUEUES
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            resp = await client.invoke(addr, send_cmd(q, code, body, keyed_properties(keys) if keys else ""), 10)
            latencies.append(time.perf_counter() - t0)
            if resp.code in (0, 10):
                msgs += batch if kind == "batch" else 1
            else:
                errors += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(inflight)))
    elapsed = time.perf_counter() - t0
    await client.close()
    return {"msgs": msgs, "errors": errors, "elapsed": elapsed, "lat": latencies}


async def drive_pull(addr: str, seconds: float, max_nums: int) -> dict:
    client = RemotingClient()
    msgs = 0
    nbytes = 0
    offsets = dict.fromkeys(range(QUEUES), 0)
    deadline = time.perf_counter() + seconds
    t0 = time.perf_counter()

    async def worker(q: int) -> None:
        nonlocal msgs, nbytes
        while time.perf_counter() < deadline:
            h = PullMessageRequestHeader(
                consumer_group="CG_BENCH", topic=TOPIC, queue_id=q, queue_offset=offsets[q], max_msg_nums=max_nums,
                sys_flag=4, commit_offset=0, suspend_timeout_millis=0, sub_version=0, subscription="*",
                expression_type="TAG", max_msg_bytes=4 * 1024 * 1024)
            resp = await client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext()), 10)
            if resp.code != 0:
                offsets[q] = 0
                continue
            body = resp.body or b""
            offsets[q] = int(resp.ext_fields["nextBeginOffset"])
            nbytes += len(body)
            n, pos = 0, 0
            while pos < len(body):
                (size,) = struct.unpack_from(">i", body, pos)
                pos += size
                n += 1
            msgs += n

    await asyncio.gather(*(worker(q) for q in range(QUEUES)))
    elapsed = time.perf_counter() - t0
    await client.close()
    return {"msgs": msgs, "errors": 0, "elapsed": elapsed, "lat": [], "bytes": nbytes}


def _child(args: tuple, out: mp.Queue) -> None:
    kind = args[1]
    if kind == "pull":
        out.put(run_client(drive_pull(args[0], args[3], args[4])))
    else:
        out.put(run_client(drive(*args)))


def run_case(addr: str, kind: str, inflight: int, seconds: float, batch: int, clients: int,
             tls_ca: str | None = None, signed: bool = False) -> dict:
    """Split `inflight` across `clients` processes (one Python client saturates one core)."""
    per = max(1, inflight // clients) if inflight > 1 else 1
    n = clients if inflight > 1 or kind == "pull" else 1
    results = run_processes(_child, (addr, kind, per, seconds, batch, tls_ca, signed), n, timeout=seconds + 60)
    figures = throughput(results)
    elapsed = max(r["elapsed"] for r in results)
    size = sum(r.get("bytes", 0) for r in results) or sum(r["msgs"] for r in results) * len(BODY)
    return {
        "msgs_s": figures["msgs_s"],
        "mb_s": size / elapsed / 1e6,
        "p50_ms": figures["p50_ms"],
        "p99_ms": figures["p99_ms"],
        "errors": sum(r["errors"] for r in results),
    }


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def with_cpu(pid: int, seconds: float, case: Callable[[], dict]) -> dict:
    """`case`'s figures and the server's CPU microseconds per message over it (steadier than msgs/s on a
    shared machine: the broker against the canned server is CPU against CPU): in all, and its user and
    system parts."""
    before = psutil.Process(pid).cpu_times()
    result = case()
    after, msgs = psutil.Process(pid).cpu_times(), max(1.0, result["msgs_s"] * seconds)
    user, system = (after.user - before.user) / msgs * 1e6, (after.system - before.system) / msgs * 1e6
    return {**result, "cpu_us": user + system, "cpu_user_us": user, "cpu_sys_us": system}


def paired(plain: Callable[[float], dict], other: Callable[[float], dict], seconds: float,
           pids: tuple[int, int]) -> tuple[dict, dict]:
    """`other` and `plain` alternately, ACL_ROUNDS times each for seconds/ACL_ROUNDS: (other, plain),
    msgs/s averaged over the rounds, p99 the worst round's, the server's CPU microseconds per message."""
    runs: dict[str, list[dict]] = {"plain": [], "other": []}
    cpu = {"plain": 0.0, "other": 0.0}
    for _ in range(ACL_ROUNDS):
        for key, fn, pid in (("plain", plain, pids[0]), ("other", other, pids[1])):
            before = cpu_seconds(pid)
            result = fn(seconds / ACL_ROUNDS)
            cpu[key] += cpu_seconds(pid) - before
            runs[key].append({**result, "msgs": result["msgs_s"] * seconds / ACL_ROUNDS})

    def merged(key: str) -> dict:
        rounds = runs[key]
        return {"msgs_s": sum(r["msgs_s"] for r in rounds) / len(rounds), "p99_ms": max(r["p99_ms"] for r in rounds),
                "errors": sum(r["errors"] for r in rounds),
                "cpu_us": cpu[key] / max(1.0, sum(r["msgs"] for r in rounds)) * 1e6}

    return merged("other"), merged("plain")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_local_certificates(Path(tmp) / "tls")
        props = Path(tmp) / "broker.properties"
        props.write_text(
            f"brokerName=bench\nlistenPort=0\nstorePathRootDir={tmp}/store\nflushDiskType=ASYNC_FLUSH\n"
            f"brokerIP1=127.0.0.1\ntls.server.mode=permissive\ntls.server.certPath={certs.cert}\n"
            f"tls.server.keyPath={certs.key}\n")
        broker = start_mq(["broker", "start", "-c", str(props)], timeout=60, env={"NAMESRV_ADDR": ""})
        acl_props = Path(tmp) / "acl-broker.properties"
        (Path(tmp) / "plain_acl.yml").write_text(ACL_YML)
        # the same settings as the plain broker (TLS permissive included: same accept path) plus ACL
        acl_props.write_text(props.read_text().replace("brokerName=bench\n", "brokerName=bench-acl\n")
                             .replace(f"{tmp}/store", f"{tmp}/acl-store")
                             + f"aclEnable=true\naclFilePath={tmp}/plain_acl.yml\n")
        acl_broker = start_mq(["broker", "start", "-c", str(acl_props)], timeout=60, env={"NAMESRV_ADDR": ""})
        ceiling = subprocess.Popen([sys.executable, "-c", CEILING_SERVER], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True, env={**os.environ})
        line = ceiling.stdout.readline()  # type: ignore[union-attr]
        ceiling_addr = line.split()[2]
        try:
            asyncio.run(create_topic(broker.addr, TOPIC, QUEUES))
            asyncio.run(create_topic(acl_broker.addr, TOPIC, QUEUES, ClientSecurity(SessionCredentials(ACL_KEY, ACL_SECRET))))
            cases = {
                "sync1": ("send", 1, 1),
                "sync64": ("send", 64, 1),
                "batch32": ("batch", 8, 32),
            }
            res = {}
            for name, (kind, inflight, batch) in cases.items():
                res[name] = with_cpu(broker.proc.pid, args.seconds, lambda k=kind, i=inflight, b=batch: run_case(
                    broker.addr, k, i, args.seconds, b, args.clients))
                if name in ("sync1", "sync64"):  # right after its plain twin: the shared machine drifts less
                    res["tls_" + name] = run_case(broker.addr, kind, inflight, args.seconds, batch, args.clients,
                                                  str(certs.ca))
                    res["acl_" + name], res["aclplain_" + name] = paired(
                        lambda s, k=kind, i=inflight, b=batch: run_case(broker.addr, k, i, s, b, args.clients),
                        lambda s, k=kind, i=inflight, b=batch: run_case(acl_broker.addr, k, i, s, b, args.clients,
                                                                        signed=True),
                        args.seconds, (broker.proc.pid, acl_broker.proc.pid))
                res["ceil_" + name] = with_cpu(ceiling.pid, args.seconds, lambda k=kind, i=inflight, b=batch: run_case(
                    ceiling_addr, k, i, args.seconds, b, args.clients))
            res["pull"] = run_case(broker.addr, "pull", QUEUES, args.seconds, 256, args.clients)
        finally:
            ceiling.stdin.close()  # type: ignore[union-attr]
            ceiling.wait(10)
            broker.stop()
            acl_broker.stop()
    parts = []
    for name in ("sync1", "sync64", "batch32"):
        r, c = res[name], res["ceil_" + name]
        parts.append(f"{name}: {r['msgs_s']:,.0f} msgs/s {r['mb_s']:.1f} MB/s p50 {r['p50_ms']:.2f} ms "
                     f"p99 {r['p99_ms']:.2f} ms ceiling {c['msgs_s']:,.0f}/s ratio {r['msgs_s'] / c['msgs_s']:.2f} "
                     f"server cpu us/msg {r['cpu_us']:.1f} vs {c['cpu_us']:.1f}"
                     + (f" errors {r['errors']}" if r["errors"] else ""))
    for name in ("sync1", "sync64"):
        t, r = res["tls_" + name], res[name]
        parts.append(f"tls_{name}: {t['msgs_s']:,.0f} msgs/s p99 {t['p99_ms']:.2f} ms plain {r['msgs_s']:,.0f}/s "
                     f"ratio {t['msgs_s'] / r['msgs_s']:.2f}" + (f" errors {t['errors']}" if t["errors"] else ""))
    for name in ("sync1", "sync64"):
        a, r = res["acl_" + name], res["aclplain_" + name]
        parts.append(f"acl_{name}: {a['msgs_s']:,.0f} msgs/s p99 {a['p99_ms']:.2f} ms plain {r['msgs_s']:,.0f}/s "
                     f"ratio {a['msgs_s'] / r['msgs_s']:.2f} broker cpu us/msg {a['cpu_us']:.1f} vs "
                     f"{r['cpu_us']:.1f}" + (f" errors {a['errors']}" if a["errors"] else ""))
    p = res["pull"]
    parts.append(f"pull: {p['msgs_s']:,.0f} msgs/s {p['mb_s']:.1f} MB/s")
    print(f"broker_send (client loop {client_loop()}) | " + " | ".join(parts)
          + " | targets: sync64>=40,000 batch32>=150,000 pull>=200,000 tls ratio>=0.70 acl ratio>=0.85")
    print(json.dumps({k: {kk: round(vv, 3) for kk, vv in v.items()} for k, v in res.items()}), file=sys.stderr)


if __name__ == "__main__":
    main()
