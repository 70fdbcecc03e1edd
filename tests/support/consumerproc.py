"""A PushConsumer in a process of its own, for tests that pause (SIGSTOP) or stop a group's member.

`python tests/support/consumerproc.py NAMESRV GROUP TOPIC [--sleep S] [--threads N] [--fail] [--orderly] [--hang]`
prints `READY consumer <client id>` once it holds its queues, then consumes until SIGTERM:
--sleep S sleeps S seconds per message (a slow listener), --fail answers RECONSUME_LATER to every message,
--hang never finishes its first message (an orderly holder that keeps its lock and commits nothing).
`ConsumerProc` starts one and stops it (SIGCONT first, should the test have paused it).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import subprocess
import sys
import threading
from pathlib import Path

READY_TIMEOUT = 60.0


class ConsumerProc:
    """One consumer process; `pause`/`resume` with real signals, `stop` always leaves nothing behind."""

    def __init__(self, namesrv: str, group: str, topic: str, *options: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), namesrv, group, topic, *options],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        ready = threading.Event()

        def pump() -> None:
            for line in self.proc.stdout:  # type: ignore[union-attr]
                self.lines.append(line.rstrip("\n"))
                if line.startswith("READY consumer "):
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(READY_TIMEOUT) or not any(x.startswith("READY consumer ") for x in self.lines):
            self.stop()
            raise RuntimeError("the consumer process did not start:\n" + "\n".join(self.lines[-30:]))
        self.client_id = next(x for x in self.lines if x.startswith("READY consumer ")).split()[2]

    def pause(self) -> None:
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


async def _main(args: argparse.Namespace) -> None:
    from mqtools.client.push_consumer import PushConsumer
    from mqtools.client.types import ConsumeFromWhere, ConsumeResult

    hung = asyncio.Event()

    async def listener(msgs: list) -> object:
        if args.hang:
            await hung.wait()
        if args.sleep:
            await asyncio.sleep(args.sleep * len(msgs))
        if args.fail:
            return ConsumeResult.RECONSUME_LATER
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer(args.group, namesrv=args.namesrv, orderly=args.orderly, consume_concurrency=args.threads,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, rebalance_interval=2.0,
                            pull_batch_size=1 if args.sleep or args.hang else 32)
    consumer.subscribe(args.topic).register_listener(listener)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with consumer:
        while not consumer.owned_queues:
            await asyncio.sleep(0.1)
        print(f"READY consumer {consumer.instance.client_id}", flush=True)
        await stop.wait()
        hung.set()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("namesrv")
    parser.add_argument("group")
    parser.add_argument("topic")
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--fail", action="store_true")
    parser.add_argument("--orderly", action="store_true")
    parser.add_argument("--hang", action="store_true")
    asyncio.run(_main(parser.parse_args()))
