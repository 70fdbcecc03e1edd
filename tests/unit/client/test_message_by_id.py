"""MQAdmin.messages.message_by_id, the one lookup `mq admin msg get` and MCP's message_by_id share: which read
an id takes, the tracks beside the message, and one not-found error for every lookup that shows a message."""

from __future__ import annotations

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.messages import MessageTrack, MessageTracks
from mqtools.client.errors import MessageNotFoundError, UnreachableError
from mqtools.common.exitcodes import EXIT_REFUSED
from mqtools.common.ids import create_offset_msg_id, is_offset_msg_id
from mqtools.common.message import MessageExt
from mqtools.common.presentation import Unreachable

OFFSET_ID = create_offset_msg_id(("10.0.0.1", 10911), 4096)
CLIENT_ID = "C0A8010A1234ABCD0000000000000001"
UNREAD_ID = "C0A8010A1234ABCD0000000000000002"
FOUND = MessageExt("Orders", b"x", msg_id=OFFSET_ID)
TRACKS = MessageTracks([MessageTrack("G1", "CONSUMED")])


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> tuple[MQAdmin, list[tuple[str, ...]]]:
    """An admin whose reads answer from memory and say which was asked."""
    admin, asked = MQAdmin("127.0.0.1:9876"), []

    async def view_message(msg_id: str) -> MessageExt:
        asked.append(("view", msg_id))
        return FOUND

    async def find(topic: str, msg_id: str) -> tuple[MessageExt | None, list[Unreachable]]:
        asked.append(("find", topic, msg_id))
        missed = [Unreachable("broker-b", None, "connection refused")] if msg_id == UNREAD_ID else []
        return (FOUND if msg_id == CLIENT_ID else None), missed

    async def message_tracks(msg: MessageExt) -> MessageTracks:
        return TRACKS

    monkeypatch.setattr(admin.messages, "view_message", view_message)
    monkeypatch.setattr(admin.messages, "_find", find)
    monkeypatch.setattr(admin.tracking, "message_tracks", message_tracks)
    return admin, asked


async def test_an_offset_msg_id_without_a_topic_is_read_from_its_broker(admin: tuple[MQAdmin, list]) -> None:
    mq, asked = admin
    detail = await mq.messages.message_by_id(OFFSET_ID)
    assert detail.message is FOUND and detail.tracks == TRACKS and asked == [("view", OFFSET_ID)]


async def test_with_a_topic_either_id_is_found_as_mqadmin_finds_it(admin: tuple[MQAdmin, list]) -> None:
    mq, asked = admin
    detail = await mq.messages.message_by_id(CLIENT_ID, "Orders")
    assert detail.message is FOUND and asked == [("find", "Orders", CLIENT_ID)]


async def test_nothing_found_is_one_not_found_error_with_exit_1(admin: tuple[MQAdmin, list]) -> None:
    mq, _ = admin
    with pytest.raises(MessageNotFoundError, match=f"^message not found: {OFFSET_ID}$") as raised:
        await mq.messages.message_by_id(OFFSET_ID, "Orders")
    assert raised.value.exit_code == EXIT_REFUSED
    with pytest.raises(MessageNotFoundError, match="^message not found: Orders broker-a queue 0 offset 9$"):
        await mq.messages.message_detail(None, "Orders broker-a queue 0 offset 9")


async def test_not_found_while_a_set_did_not_answer_is_not_known(admin: tuple[MQAdmin, list]) -> None:
    """Until stop 106 a message on a set that did not answer was "message not found" (exit 1)."""
    mq, _ = admin
    with pytest.raises(UnreachableError, match="broker-b: connection refused"):
        await mq.messages.message_by_id(UNREAD_ID, "Orders")


def test_only_an_offset_msg_id_names_its_broker() -> None:
    assert is_offset_msg_id(OFFSET_ID)
    assert not is_offset_msg_id(CLIENT_ID) and not is_offset_msg_id("not hex")
