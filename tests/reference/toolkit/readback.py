"""Apache's own reading of a write made on its cluster: mqadmin 4.9.8 in a JVM per read (as operators run
it), parsed into what a test compares; and `mq admin` run in-process for the write itself."""

from __future__ import annotations

import json
import re
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import apache
from support.adminsupport import mq_here
from tkworld import LAGGING, LIVE, SENT, TOPIC, World, settled

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.errors import ConsumerNotOnlineError


def mqadmin(root: Path, namesrv: str, *args: str) -> str:
    """What Apache's mqadmin printed; it must have succeeded."""
    done = apache.mqadmin(root, *args, "-n", namesrv)
    assert done.returncode == 0 and "Exception" not in done.stdout + done.stderr, (
        f"exit {done.returncode}\n{done.stderr}\n{done.stdout}")
    return done.stdout


def ok(*args: str, world: World, stdin: str | None = None) -> str:
    """`mq admin ARGS` on the world's cluster; it must have succeeded."""
    result = mq_here("admin", *args, namesrv=world.namesrv, stdin=stdin)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def registered_now(world: World, topic: str) -> None:
    """Bring Apache's name server up to broker-a's topic table version before a name-server-side change
    to its routes (wipeWritePerm) is read. Such a change lasts until the broker next registers a changed
    table, and Apache's deleteTopic changes the table without registering: the next 30 s registration
    would undo the change mid-test. An update registers at once, with the broker's current version."""
    ok("topic", "update", topic, "-b", world.brokers["broker-a"], "--perm", "rw", world=world)


def route(root: Path, namesrv: str, topic: str) -> dict[str, tuple[int, int, int]]:
    """Apache's topicRoute: per broker name, (read queues, write queues, perm)."""
    return parse_route(mqadmin(root, namesrv, "topicRoute", "-t", topic))


def parse_route(text: str) -> dict[str, tuple[int, int, int]]:
    """What mqadmin's topicRoute printed (JSON with bare integer keys): per broker name, (read queues,
    write queues, perm)."""
    doc = json.loads(re.sub(r"([{,]\s*)(\d+):", r'\1"\2":', text))
    return {q["brokerName"]: (q["readQueueNums"], q["writeQueueNums"], q["perm"]) for q in doc["queueDatas"]}


_BROKER_HEADER = re.compile(r"^=+[^:]*:(\S+?)=+$")


def consumer_config(root: Path, world: World, group: str) -> dict[str, dict[str, str]]:
    """Apache's getConsumerConfig: per broker name, the group's config fields (none: the group is gone)."""
    return parse_consumer_config(mqadmin(root, world.namesrv, "getConsumerConfig", "-g", group))


def parse_consumer_config(text: str) -> dict[str, dict[str, str]]:
    """What mqadmin's getConsumerConfig printed: per broker name, the group's config fields."""
    configs: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        header = _BROKER_HEADER.match(line.strip())
        if header:
            current = configs.setdefault(header.group(1), {})
        elif current is not None and "=" in line:
            key, value = line.split("=", 1)
            current[key.strip()] = value.strip()
    return configs


def broker_config_value(text: str, key: str) -> str:
    """One key's value in what mqadmin's getBrokerConfig printed."""
    return next(line.split("=", 1)[1].strip() for line in text.splitlines() if line.split("=", 1)[0].strip() == key)


def config_set_read_back(world: World, addr: str, get_broker_config: Callable[[], str]) -> None:
    """`mq admin broker config set` of maxMessageSize on `addr`, read back from what Apache's getBrokerConfig
    prints (`get_broker_config`, whichever mqadmin), then the old value restored and read back too."""

    def value() -> str:
        return broker_config_value(get_broker_config(), "maxMessageSize")

    was = value()
    ok("broker", "config", "set", addr, "maxMessageSize", "4194305", world=world)
    try:
        assert value() == "4194305"
    finally:
        ok("broker", "config", "set", addr, "maxMessageSize", was, world=world)
    assert value() == was


def diff_total(root: Path, world: World, group: str) -> int:
    """Apache's consumerProgress -g GROUP: its 'Diff Total' line."""
    out = mqadmin(root, world.namesrv, "consumerProgress", "-g", group)
    return int(next(line.split(":", 1)[1] for line in out.splitlines() if line.startswith("Diff Total:")))


#: What the Java client logs when a request got no answer within its timeout (a broker that held a pull 30 s).
BROKER_STALLED = "remove timeout request"


def reset_followed(world: World) -> None:
    """`mq admin offset reset` of the live group to its first lagging message while its Java consumer runs:
    the broker tells the consumer, which receives again every message stored since (the lagging ones, and
    what other tests sent to the topic meanwhile) and none from before, then commits back to no lag."""
    registered_everywhere(world, LIVE)
    lagging = {f"tk-{SENT}-{i}" for i in range(LAGGING)}
    for attempt in (1, 2):
        before = len(world.consumer.received())
        ok("offset", "reset", LIVE, TOPIC, "--to-time", str(world.lagging_since_ms), "--yes", world=world)

        def redelivered(events: list[dict], before: int = before) -> list[dict]:
            got = [e for e in events if e.get("event") == "received"][before:]
            return got if lagging <= {e.get("keys") for e in got} else []

        try:
            again = world.consumer.wait_for(redelivered, 60, "the reset's redeliveries")
            break
        except AssertionError as exc:  # say which lagging messages never came again (CI at ae1670d did not)
            got = {e.get("keys") for e in world.consumer.received()[before:]}
            failure = AssertionError(f"never redelivered: {sorted(lagging - got)}\n{exc}")
            # the broker held a pull past the client's 30 s (CI at fddd43a: an Apache 5.5.0 broker beside the suite's
            # other workers), and the answer that came after the reset moved the queue past it: the machine's doing,
            # so the reset is run once more, as an operator would
            if attempt == 2 or BROKER_STALLED not in world.consumer.client_log():
                raise failure from None
            warnings.warn(f"a pull went unanswered for 30 s; the reset once more: {failure}", stacklevel=1)
    assert all(e["storeTimestamp"] >= world.lagging_since_ms for e in again), again
    settled(world.namesrv)


def registered_everywhere(world: World, group: str, timeout: float = 40.0) -> None:
    """Until every master lists the group's consumer. A broker restarted by an earlier test (the drill's)
    learns of a running consumer from its next heartbeat (every 30 s); until then it answers a reset with
    CONSUMER_NOT_ONLINE, the offsets are only committed there, and the running consumer, told nothing,
    commits its own over them (CI at 0a86da8: the reset test's redeliveries never came)."""
    deadline = time.monotonic() + timeout
    with SyncMQAdmin(world.namesrv) as admin:
        for addr in world.brokers.values():
            while True:
                try:
                    admin.groups.consumer_connections(group, addr)
                    break
                except ConsumerNotOnlineError:
                    assert time.monotonic() < deadline, f"{group}'s consumer never registered at {addr}"
                    time.sleep(0.5)
