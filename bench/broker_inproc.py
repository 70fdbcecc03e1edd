"""The broker's event-loop work per plain send (or pull), in-process, without sockets; one summary line.

Frames of SEND_MESSAGE_V2 as our Producer sends them (its V2 header with a fresh UNIQ_KEY and WAIT, 1 KiB
bodies, 64 frames to a read) are fed to a connection of a real broker (ASYNC_FLUSH, temp store, started in this
process) whose transport keeps the answers instead of sending them: what is measured is the broker's own work per send (the
frame loop, the header, the checks, the put, the dispatch, the answer), none of the kernel's and none of a
client's. The baseline, in the same run: our RemotingServer answering the same frames with a canned response
(broker_send.py's ceiling), so `ratio` is how many times the remoting floor a send costs. Each side runs in a
child process of its own.

`--request record`: the same sends as a front worker hands them to the store's process (frontWorkers: records
its compiled splitter made of the frames, mqtools/server/broker/front/send_record.py), each stored and answered
through the store side of the link (relay.WorkerLink.send); the ceiling is the same canned answer to the frames.

`--request pull`: PULL_MESSAGE frames as the Java push consumer sends them in a backlog drain (32 messages, commit
offset and suspend flags, the subscription from the group's heartbeat; 8 frames to a read, one per queue) over
a store the same sends filled in runs of 32 per queue, as batches lie; the ceiling answers with a canned body of
32 KiB. The figure is per pull.

Two measures: the loop thread's CPU per send (the median of --repeat rounds; on a shared machine it moves with
the neighbours), and with --callgrind, where valgrind is installed, the instructions the loop thread executes
per send, counted by callgrind (the same to about 2% from run to run; how stop 72 measured the compiled send
path: 220k instructions a send before it, 167k after, the floor 61k and 44k).

Usage: .venv/bin/python bench/broker_inproc.py [--request send|record|pull] [--chunks 200] [--repeat 5] [--callgrind]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import broker_send

PER_READ = 64
WARM_CHUNKS = 20
#: A pull's messages, the Java push consumer's pullBatchSize.
PULL_BATCH = 32
#: The Java push consumer's sysFlag in a drain: commit offset and suspend, no subscription (it comes from the
#: heartbeat).
PULL_FLAGS = 0x1 | 0x2
GROUP = "CG_INPROC"


class AnswerSink:
    """What a connection writes its answers to: kept (the last write), not sent."""

    def __init__(self) -> None:
        self.parts: list[bytes | memoryview] = [b""]  # the last write, whose answers are checked to be SUCCESS

    @property
    def last(self) -> bytes:
        return b"".join(self.parts)

    def write(self, data: bytes) -> None:
        self.parts = [data]

    def writelines(self, parts: list[bytes]) -> None:
        self.parts = parts  # not joined: a vectored write does not copy in user space either

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 50000) if name == "peername" else default

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:  # the broker's shutdown closes its connections
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _server(side: str, work: Path) -> tuple[Any, Any]:
    """(the RemotingServer to feed, what stops it)."""
    from mqtools.remoting.codes import RequestCode
    from mqtools.remoting.headers import PullMessageResponseHeader, SendMessageResponseHeader
    from mqtools.remoting.server import RemotingServer
    from mqtools.server.broker.app import BrokerController
    from mqtools.server.broker.config import load_config

    if side == "ceiling":
        server = RemotingServer("127.0.0.1", 0)
        ext = SendMessageResponseHeader(msg_id="7F00000100002A9F0000000000000000", queue_id=0,
                                        queue_offset=0).to_ext()
        server.register(RequestCode.SEND_MESSAGE_V2, lambda conn, req: req.response(ext_fields=dict(ext)))
        pulled = PullMessageResponseHeader(0, PULL_BATCH, 0, 1_000_000).to_ext()
        body = bytes(PULL_BATCH * 1024)
        server.register(RequestCode.PULL_MESSAGE, lambda conn, req: req.response(ext_fields=dict(pulled), body=body))
        return server, None
    conf = work / "broker.properties"
    conf.write_text(f"brokerName=inproc\nlistenPort=0\nstorePathRootDir={work / 'store'}\n"
                    "namesrvAddr=127.0.0.1:1\nflushDiskType=ASYNC_FLUSH\nmappedFileSizeCommitLog=1073741824\n")
    controller = BrokerController(load_config(conf, {}))
    await controller.start()
    return controller.server, controller


def pull_reads(chunks: int) -> list[bytes]:
    """`chunks` reads of one PULL_MESSAGE per queue, each read PULL_BATCH further into every queue."""
    from mqtools.remoting.codes import RequestCode
    from mqtools.remoting.command import RemotingCommand
    from mqtools.remoting.headers import PullMessageRequestHeader

    def frame(queue_id: int, offset: int) -> bytes:
        h = PullMessageRequestHeader(consumer_group=GROUP, topic=broker_send.TOPIC, queue_id=queue_id,
                                     queue_offset=offset, max_msg_nums=PULL_BATCH, sys_flag=PULL_FLAGS,
                                     commit_offset=offset, suspend_timeout_millis=15_000, sub_version=1)
        return RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext()).encode()

    return [b"".join(frame(q, i * PULL_BATCH) for q in range(broker_send.QUEUES)) for i in range(chunks)]


def heartbeat_frame() -> bytes:
    """The consumer's heartbeat: its group and its subscription (all tags of the topic)."""
    from mqtools.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData
    from mqtools.remoting.codes import RequestCode
    from mqtools.remoting.command import RemotingCommand

    data = HeartbeatData(client_id="127.0.0.1@inproc", consumer_data_set=[
        ConsumerData(GROUP, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                     subscription_data_set=[SubscriptionData(broker_send.TOPIC, sub_version=1)])])
    return RemotingCommand.request(RequestCode.HEART_BEAT, body=data.to_json()).encode()


async def child(side: str, request: str, chunks: int, repeat: int, measured_once: bool) -> dict:
    """One side: warm up, then feed `chunks` reads of PER_READ frames `repeat` times (once under callgrind)."""
    import logging

    from mqtools.common.ids import UniqueKeyGenerator
    from mqtools.remoting.frame import FrameDecoder
    from mqtools.server.broker.fast_failure import PROBE_S

    logging.disable(logging.WARNING)  # the broker's name server (none) is unreachable on purpose
    with tempfile.TemporaryDirectory() as tmp:
        server, controller = await _server(side, Path(tmp))
        conn = server.new_connection()
        transport = AnswerSink()
        conn.connection_made(transport)
        keys = UniqueKeyGenerator()
        if request == "pull":  # the messages (runs of PULL_BATCH per queue), then the pulls that read them
            runs = (chunks + WARM_CHUNKS) * broker_send.QUEUES
            sends = [b"".join(broker_send.send_cmd(r % broker_send.QUEUES,
                                                   properties=broker_send.keyed_properties(keys)).encode()
                              for _ in range(PULL_BATCH)) for r in range(runs)]
            reads = pull_reads(chunks + WARM_CHUNKS)
        else:
            sends = []
            reads = [b"".join(broker_send.send_cmd(i % broker_send.QUEUES,
                                                   properties=broker_send.keyed_properties(keys)).encode()
                              for i in range(PER_READ)) for _ in range(chunks + WARM_CHUNKS)]
        link = None
        if request == "record" and side == "broker":
            from mqtools.server.broker.front.relay import WorkerLink
            from mqtools.server.broker.front.send_record import SendSplitter

            splitter, link = SendSplitter(server.max_frame, controller.config.broker_cluster_name), WorkerLink(server, lambda: None)
            conn.data_received(reads[0])  # the first send creates the topic (the records' path leaves that to frames)
            await controller.topics.until_written()
            reads = [[record for kind, record in splitter.feed(data) if kind == SendSplitter.SEND] for data in reads]
            if any(len(records) != PER_READ for records in reads):
                raise SystemExit("broker_inproc: the splitter did not make a record of every send")

        probe = controller.fast_failure if controller is not None else None
        loop = asyncio.get_running_loop()

        def feed(done: int, data: Any) -> int:
            if probe is not None:  # what the fast-failure probe's timer does when a running loop fires it between
                probe._due = loop.time() + PROBE_S  # reads: nothing here turns the loop while it is measured
            if link is not None:  # a worker's records
                for record in data:
                    link.send(conn, record)
            else:
                conn.data_received(data)
            conn._flush()
            return done + 1

        if controller is not None and sends:
            feed(0, sends[0])
            await controller.topics.until_written()  # (see below)
            for data in sends[1:]:
                feed(0, data)
            feed(0, heartbeat_frame())
            await asyncio.sleep(0.2)  # the dispatch of the last messages, the group created by the heartbeat
        for data in reads[:WARM_CHUNKS]:  # not through reduce: --callgrind counts only the measured rounds
            feed(0, data)
        await asyncio.sleep(0)
        if controller is not None:
            # the first send auto-created the topic: until its table is written, every send is answered by a
            # task that waits for that write, which a running broker's sends are not
            await controller.topics.until_written()
            await asyncio.sleep(0)
        per_read = broker_send.QUEUES if request == "pull" else PER_READ
        per_send: list[float] = []
        for _ in range(1 if measured_once else repeat):
            begin = time.thread_time()
            functools.reduce(feed, reads[WARM_CHUNKS:], 0)  # what --callgrind counts: the calls inside reduce
            per_send.append((time.thread_time() - begin) / (chunks * per_read) * 1e6)
            await asyncio.sleep(0)  # the loop's own work between reads (timers, flush callbacks)
        if controller is not None:
            await controller.shutdown()
        answers = FrameDecoder().feed(transport.last)
        codes = sorted({cmd.code for cmd in answers})
        return {"smallest_body": min(len(cmd.body or b"") for cmd in answers), "us": statistics.median(per_send), "runs": per_send, "sends": chunks * per_read, "codes": codes}


def run_side(side: str, args: argparse.Namespace) -> dict:
    """A side in a child process; under callgrind (counting inside functools.reduce only) when asked."""
    cmd = [sys.executable, __file__, "--side", side, "--request", args.request, "--chunks", str(args.chunks),
           "--repeat", str(args.repeat)]
    if not args.callgrind:
        return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                               "--toggle-collect=functools_reduce", *cmd, "--once"],
                              check=True, capture_output=True, text=True)
        result = json.loads(proc.stdout.splitlines()[-1])
        totals = next(line for line in out.read_text().splitlines() if line.startswith(("totals:", "summary:")))
        result["instructions"] = int(totals.split()[1]) / result["sends"]
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--request", choices=("send", "record", "pull"), default="send",
                        help="what is fed: plain sends (default), the same as a front worker's records, or a drain's "
                             "pulls")
    parser.add_argument("--chunks", type=int, default=200, help=f"reads of {PER_READ} frames (of 8 pulls) per round")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (CPU time: the median is reported)")
    parser.add_argument("--callgrind", action="store_true", help="also count instructions (needs valgrind)")
    parser.add_argument("--side", choices=("broker", "ceiling"), help=argparse.SUPPRESS)
    parser.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(asyncio.run(child(args.side, args.request, args.chunks, args.repeat, args.once))))
        return
    if args.callgrind and shutil.which("valgrind") is None:
        parser.error("--callgrind needs valgrind on the PATH")
    compiled = "pure Python" if os.environ.get("MQ_PURE_PYTHON", "") not in ("", "0") else "compiled where built"
    broker, ceiling = run_side("broker", args), run_side("ceiling", args)
    if broker["codes"] != [0]:
        sys.exit(f"broker_inproc: the broker answered codes {broker['codes']}, not only SUCCESS: no figure")
    if args.request == "pull" and broker["smallest_body"] < PULL_BATCH * 1024:
        sys.exit(f"broker_inproc: a pull answered {broker['smallest_body']} bytes, not {PULL_BATCH} messages: no figure")
    unit = args.request
    line = (f"broker_inproc ({compiled}, {broker['sends']:,} {unit}s a round) | broker {broker['us']:.1f} us/{unit} "
            f"(runs {', '.join(f'{r:.1f}' for r in broker['runs'])}) ceiling {ceiling['us']:.1f} us/{unit} "
            f"ratio {broker['us'] / ceiling['us']:.2f}")
    if args.callgrind:
        line += (f" | instructions/{unit} broker {broker['instructions'] / 1000:.1f}k ceiling "
                 f"{ceiling['instructions'] / 1000:.1f}k ratio {broker['instructions'] / ceiling['instructions']:.2f}")
    print(line + " | lower is better")


if __name__ == "__main__":
    main()
