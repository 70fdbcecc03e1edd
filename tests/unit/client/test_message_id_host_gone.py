"""`msg get ID -t TOPIC` (and queryMsgById) with an offset msgId whose storing master is no longer registered (killed):
the id is read by its commit log offset, which asks the set's other replicas, before the unique-key lookup. Found in
review on a 2m-2s-sync cluster: with -t it looked the id up as a unique key only and said "not found" for a message
its slave had; without -t it found it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.messages import MessageHits, MessageTracks
from mqtools.client.errors import ConnectFailedError, MessageNotFoundError, MQClientError, UnreachableError
from mqtools.common.ids import create_offset_msg_id
from mqtools.common.message import MessageExt
from mqtools.remoting.bodies import BrokerData, ClusterInfo

GONE = ("10.0.0.1", 10911)
"""broker-a's killed master, which stored the message; the name servers dropped it."""
OFFSET_ID = create_offset_msg_id(GONE, 4096)
ON_SLAVE = MessageExt("Orders", b"x", msg_id=OFFSET_ID, store_host=GONE)


@dataclass
class Lookup:
    """What the lookup asked (the read by offset, the unique-key index), and what the read by offset answers."""

    asked: list[tuple[str, str]] = field(default_factory=list)
    by_offset: MessageExt | Exception = field(default_factory=lambda: ON_SLAVE)


@pytest.fixture
def lookup(monkeypatch: pytest.MonkeyPatch, admin: MQAdmin) -> Lookup:
    seen = Lookup()

    async def cluster_info() -> ClusterInfo:
        return ClusterInfo({"broker-a": BrokerData("C", "broker-a", {1: "10.0.0.2:10911"})}, {"C": {"broker-a"}})

    async def view_message(msg_id: str) -> MessageExt:
        seen.asked.append(("view", msg_id))
        if isinstance(seen.by_offset, Exception):
            raise seen.by_offset
        return seen.by_offset

    async def query_by_unique_key(topic: str, key: str) -> MessageHits:
        seen.asked.append(("unique", key))
        return MessageHits([], [])

    async def message_tracks(msg: MessageExt) -> MessageTracks:
        return MessageTracks([])

    monkeypatch.setattr(admin, "cluster_info", cluster_info)
    monkeypatch.setattr(admin.messages, "view_message", view_message)
    monkeypatch.setattr(admin.messages, "query_by_unique_key", query_by_unique_key)
    monkeypatch.setattr(admin.tracking, "message_tracks", message_tracks)
    return seen


async def test_an_offset_msg_id_of_a_gone_master_is_read_from_its_slave(admin: MQAdmin, lookup: Lookup) -> None:
    detail = await admin.messages.message_by_id(OFFSET_ID, "Orders")
    assert detail.message is ON_SLAVE and lookup.asked == [("view", OFFSET_ID)]


async def test_mqadmin_query_msg_by_id_still_takes_it_for_a_unique_key(admin: MQAdmin, lookup: Lookup) -> None:
    """As Apache's queryMsgById, which cannot reach a host the name servers dropped (the outage sweeps expect it)."""
    assert await admin.messages.find_message("Orders", OFFSET_ID) is None
    assert lookup.asked == [("unique", OFFSET_ID)]


async def test_then_the_unique_key_and_not_known_while_its_master_did_not_answer(admin: MQAdmin,
                                                                                 lookup: Lookup) -> None:
    """No replica had it and its master did not answer: the unique-key index is asked as well; nothing there is not
    "not found" (exit 1) while the master that stored it could not be asked."""
    lookup.by_offset = ConnectFailedError("connect to 10.0.0.1:10911 failed", "connection refused")
    with pytest.raises(UnreachableError, match="10.0.0.1:10911: connection refused"):
        await admin.messages.message_by_id(OFFSET_ID, "Orders")
    assert lookup.asked == [("view", OFFSET_ID), ("unique", OFFSET_ID)]


async def test_an_id_no_broker_has_is_not_found(admin: MQAdmin, lookup: Lookup) -> None:
    lookup.by_offset = MQClientError(f"no message at {OFFSET_ID}")
    with pytest.raises(MessageNotFoundError, match=f"^message not found: {OFFSET_ID}$"):
        await admin.messages.message_by_id(OFFSET_ID, "Orders")
    assert lookup.asked == [("view", OFFSET_ID), ("unique", OFFSET_ID)]
