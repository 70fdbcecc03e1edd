"""Run the C++ RocketMQ client (PyPI `rocketmq==0.4.4`, bundling librocketmq) in a subprocess.

A crash or hang in the C library then cannot take pytest down. The script prints one JSON
line per event; closing its stdin stops a consumer cleanly. SCRIPT is the default producer /
push consumer; a test with its own script passes it to CppClient (long-running) or run_cpp
(run to the end). Each process gets its own HOME, where librocketmq writes its logs.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from support.clientsupport import until

#: Source for C++-client scripts that send: `send_sync(producer, msg)`, librocketmq's send_sync tried up
#: to three times. librocketmq 1.2.x tries a send five times back to back and reports any failure as
#: "No route info"; one way to fail all five is its heartbeat thread still opening the broker
#: connection the first send wants (another thread then gets none at once). A failed try is printed as
#: a {"send_failed": ...} line, so a test's events show it; a send that keeps failing still raises.
SEND_SYNC = r'''
import json as _json, time as _time

def send_sync(producer, msg, tries=3):
    for attempt in range(tries):
        try:
            return producer.send_sync(msg)
        except Exception as exc:
            if attempt == tries - 1:
                raise
            print(_json.dumps({"send_failed": str(exc)}), flush=True)
            _time.sleep(0.5)
'''

SCRIPT = SEND_SYNC + r'''
import json, sys, threading
from rocketmq.client import Message, Producer, PushConsumer

mode, ns, topic = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "produce":
    count = int(sys.argv[4])
    producer = Producer("PG_CPP_INTEROP")
    producer.set_namesrv_addr(ns)
    producer.start()
    for i in range(count):
        msg = Message(topic)
        msg.set_keys(f"cpp-key-{i}")
        msg.set_tags("TagCpp")
        msg.set_property("origin", "cpp")
        msg.set_body(f"cpp-body-{i}")
        result = send_sync(producer, msg)
        print(json.dumps({"sent": i, "status": int(result.status), "msg_id": result.msg_id}), flush=True)
    producer.shutdown()
    sys.exit(0)

group, props = sys.argv[4], sys.argv[5].split(",")

# Every line goes out under this lock, the main thread's too: print writes the text and the newline
# separately, so two threads printing at once can join two lines into one that is not JSON (a consumer's
# "started" line once swallowed a delivery that way, failing a test that our broker had passed).
lock = threading.Lock()

def on_message(msg):
    line = json.dumps({"body": msg.body.decode(), "tags": msg.tags.decode() if isinstance(msg.tags, bytes) else msg.tags,
                      "keys": msg.keys.decode() if isinstance(msg.keys, bytes) else msg.keys,
                      "props": {p: (lambda v: v.decode() if isinstance(v, bytes) else v)(msg.get_property(p))
                                for p in props if p}, "id": msg.id})
    with lock:
        print(line, flush=True)
    return None  # the wrapper answers CONSUME_SUCCESS when the callback does not raise

consumer = PushConsumer(group)
consumer.set_namesrv_addr(ns)
consumer.subscribe(topic, on_message)
consumer.start()
with lock:
    print(json.dumps({"started": True}), flush=True)
sys.stdin.read()
consumer.shutdown()
'''


def cpp_env(home: Path) -> dict[str, str]:
    """The environment for a C++-client process: librocketmq logs under $HOME/logs/rocketmq-cpp."""
    return {**os.environ, "HOME": str(home)}


def parse_events(lines: Iterable[str]) -> list[dict]:
    """The JSON lines among `lines` (librocketmq may print other text)."""
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def run_cpp(script: str, args: list[str], home: Path, timeout: float = 90.0) -> list[dict]:
    """Run `script` to its end; it must exit 0 with a last line {"done": true}. All its events."""
    proc = subprocess.run([sys.executable, "-c", script, *args], check=False, capture_output=True, text=True,
                          timeout=timeout, env=cpp_env(home))
    events = parse_events(proc.stdout.splitlines())
    assert proc.returncode == 0 and events and events[-1].get("done"), (proc.returncode, proc.stdout[-2000:],
                                                                          proc.stderr[-2000:])
    return events


class CppClient:
    """One C++-client subprocess (`script`, SCRIPT by default) and the JSON lines it printed."""

    def __init__(self, args: list[str], home: Path, script: str = SCRIPT) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.stderr_path = home / "stderr.txt"
        with open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=err, text=True, env=cpp_env(home),
            )
        self.home = home
        self.events: list[dict] = []
        #: Output lines that are not JSON events (librocketmq's own text, or a line two prints garbled).
        self.noise: list[str] = []
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    @classmethod
    def produce(cls, namesrv: str, topic: str, count: int, home: Path) -> CppClient:
        return cls(["produce", namesrv, topic, str(count)], home)

    @classmethod
    def consume(cls, namesrv: str, topic: str, group: str, props: list[str], home: Path) -> CppClient:
        return cls(["consume", namesrv, topic, group, ",".join(props)], home)

    async def started(self) -> CppClient:
        """Wait until the consumer has started and its first rebalance has assigned it the queues."""
        await until(lambda: any("started" in e for e in self.events), 30, "the C++ consumer to start")
        await asyncio.sleep(3)
        return self

    async def until_received(self, count: int, timeout: float = 60) -> None:
        """Wait for `count` messages; fail with how many came and librocketmq's log."""
        try:
            await until(lambda: len(self.received()) >= count, timeout, f"{count} messages at the C++ consumer")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; got {sorted(self.bodies)}; other output {self.noise}\n"
                                 f"{self.log_tail()}") from None

    def _pump(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            events = parse_events([line])
            if events:
                self.events.extend(events)
            elif line.strip():
                self.noise.append(line.rstrip())

    def received(self) -> list[dict]:
        return [e for e in self.events if "body" in e]

    @property
    def bodies(self) -> list[str]:
        return [e["body"] for e in self.received()]

    def stderr_tail(self, chars: int = 3000) -> str:
        """The end of the script's stderr (a Python traceback when the C++ client raised)."""
        return self.stderr_path.read_text(errors="replace")[-chars:]

    def log_tail(self, lines: int = 60) -> str:
        """The end of librocketmq's own log: what the client saw when a test waits in vain."""
        logs = sorted((self.home / "logs" / "rocketmq-cpp").glob("*"), key=lambda p: p.stat().st_mtime)
        if not logs:
            return "(no librocketmq log)"
        return "\n".join(logs[-1].read_text(errors="replace").splitlines()[-lines:])

    def wait(self, timeout: float = 60.0) -> int:
        code = self.proc.wait(timeout)
        self._thread.join(5)
        return code

    def stop(self, timeout: float = 30.0) -> int:
        """Close stdin (the script shuts its consumer down cleanly); kill if that hangs."""
        try:
            if self.proc.stdin is not None and not self.proc.stdin.closed:
                self.proc.stdin.close()
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)
        finally:
            self._thread.join(5)
