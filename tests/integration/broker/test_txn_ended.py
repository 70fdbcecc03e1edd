"""Which END_TRANSACTION may end a transaction: once each, by a genuine half message, whatever the client's unique
key, however two ENDs interleave, and across a restart. An in-process broker, driven request by request."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from support.inprocbroker import inproc_broker

from mqtools.common import properties as P
from mqtools.common.codec import encode_stored
from mqtools.common.ids import decode_offset_msg_id
from mqtools.common.message import MessageExt
from mqtools.common.sysflag import TRANSACTION_PREPARED_TYPE
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import SendMessageRequestHeader
from mqtools.remoting.transaction import COMMIT, ROLLBACK, EndTransactionRequestHeader
from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.topic_config import TopicConfig
from mqtools.server.broker.transaction.bridge import HALF_TOPIC

pytestmark = pytest.mark.timeout(60)

TOPIC = "TxT"
GROUP = "PG"
ALREADY = "has already ended"


def _addr(b: BrokerController) -> str:
    return f"127.0.0.1:{b.server.port}"


def _topic(b: BrokerController, topic: str, queues: int = 1, perm: int = 6) -> None:
    b.topics.update(TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues, perm=perm))


async def _send(b: BrokerController, client: RemotingClient, topic: str, body: bytes, props: dict[str, str],
                sys_flag: int = 0, queue_id: int = 0) -> RemotingCommand:
    props.setdefault(P.UNIQ_KEY, uuid.uuid4().hex.upper())
    h = SendMessageRequestHeader(producer_group=GROUP, topic=topic, default_topic="TBW102",
                                 default_topic_queue_nums=4, queue_id=queue_id, sys_flag=sys_flag,
                                 born_timestamp=int(time.time() * 1000), flag=0,
                                 properties=P.properties_to_string(props))
    return await client.invoke(_addr(b), RemotingCommand.request(RequestCode.SEND_MESSAGE, h.to_ext(), body), 10)


async def _half(b: BrokerController, client: RemotingClient, body: bytes = b"x", uniq: str | None = None,
                queue_id: int = 0) -> tuple[int, int]:
    """A half message sent as a producer sends it: (its half queue offset, its commitlog offset)."""
    props = {P.TRAN_MSG: "true", P.PGROUP: GROUP}
    if uniq is not None:
        props[P.UNIQ_KEY] = uniq
    resp = await _send(b, client, TOPIC, body, props, TRANSACTION_PREPARED_TYPE, queue_id)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return int(resp.ext_fields["queueOffset"]), decode_offset_msg_id(resp.ext_fields["msgId"])[1]


async def _end(b: BrokerController, client: RemotingClient, half: tuple[int, int], kind: int,
               from_check: bool = False, group: str = GROUP) -> tuple[int, str]:
    h = EndTransactionRequestHeader(producer_group=group, tran_state_table_offset=half[0], commit_log_offset=half[1],
                                    commit_or_rollback=kind, msg_id="M", from_transaction_check=from_check)
    resp = await client.invoke(_addr(b), RemotingCommand.request(RequestCode.END_TRANSACTION, h.to_ext()), 10)
    return resp.code, resp.remark or ""


def _count(b: BrokerController, topic: str = TOPIC, queue_id: int = 0) -> int:
    return b.store.get_max_offset_in_queue(topic, queue_id)


async def _copy(b: BrokerController) -> tuple[int, int]:
    """The newest check copy in the half queue, after one round of checks (nobody to ask)."""
    await asyncio.sleep(0.01)
    done = await b.transaction_check.check_once()
    assert done.unasked >= 1
    copy = b.transactions.half_at(b.transactions.max_offset(HALF_TOPIC) - 1)
    assert copy is not None
    return copy.queue_offset, copy.commit_log_offset


async def test_a_retried_transaction_with_the_same_unique_key_commits(tmp_path: Path) -> None:
    """A client keeps the UNIQ_KEY of a Message it sends again: the first attempt's rollback must not end the
    second attempt (its commit was refused as already ended and its half message never checked: lost)."""
    async with inproc_broker(tmp_path, transaction_time_out=0) as (b, client):
        _topic(b, TOPIC)
        first = await _half(b, client, b"attempt 1", uniq="K" * 32)
        assert await _end(b, client, first, ROLLBACK) == (ResponseCode.SUCCESS, "")
        second = await _half(b, client, b"attempt 2", uniq="K" * 32)
        assert await _end(b, client, second, COMMIT) == (ResponseCode.SUCCESS, "")
        assert _count(b) == 1
        code, remark = await _end(b, client, first, COMMIT)
        assert code == ResponseCode.SYSTEM_ERROR and ALREADY in remark


async def test_an_open_transaction_sharing_an_ended_ones_key_is_checked(tmp_path: Path) -> None:
    async with inproc_broker(tmp_path, transaction_time_out=0) as (b, client):
        _topic(b, TOPIC)
        first = await _half(b, client, b"attempt 1", uniq="K" * 32)
        assert (await _end(b, client, first, ROLLBACK))[0] == ResponseCode.SUCCESS
        await _half(b, client, b"attempt 2", uniq="K" * 32)
        copy = await _copy(b)  # asked about, not skipped as ended
        assert await _end(b, client, copy, COMMIT, from_check=True) == (ResponseCode.SUCCESS, "")
        assert _count(b) == 1


@pytest.mark.parametrize("flush", ["SYNC_FLUSH", "ASYNC_FLUSH"])
async def test_two_ends_read_together_end_the_transaction_once(tmp_path: Path, flush: str) -> None:
    """Two ENDs of one transaction read before either was done both passed the ended check: two COMMITs stored
    the message twice, a COMMIT and a ROLLBACK both succeeded and the message was delivered."""
    async with inproc_broker(tmp_path, flush_disk_type=flush) as (b, client):
        _topic(b, TOPIC)
        half = await _half(b, client)
        answers = await asyncio.gather(_end(b, client, half, COMMIT), _end(b, client, half, COMMIT))
        assert sorted(code for code, _ in answers) == [ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR]
        assert any(ALREADY in remark for _, remark in answers)
        assert _count(b) == 1
        half = await _half(b, client)
        commit, rollback = await asyncio.gather(_end(b, client, half, COMMIT), _end(b, client, half, ROLLBACK))
        assert commit == (ResponseCode.SUCCESS, "")
        assert rollback[0] == ResponseCode.SYSTEM_ERROR and ALREADY in rollback[1]
        assert _count(b) == 2


async def test_the_producers_end_and_its_answer_to_a_check_read_together_commit_once(tmp_path: Path) -> None:
    async with inproc_broker(tmp_path, transaction_time_out=0, flush_disk_type="SYNC_FLUSH") as (b, client):
        _topic(b, TOPIC)
        half = await _half(b, client)
        copy = await _copy(b)
        other = RemotingClient()
        try:
            answers = await asyncio.gather(_end(b, client, half, COMMIT),
                                           _end(b, other, copy, COMMIT, from_check=True))
        finally:
            await other.close()
        assert sorted(code for code, _ in answers) == [ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR]
        assert _count(b) == 1


async def test_an_end_after_a_restart_finds_the_transaction_ended(tmp_path: Path) -> None:
    """The memory of ended transactions is rebuilt only from the ops after the check service's progress: after a
    restart an END on a check copy of a committed transaction committed it again."""
    async with inproc_broker(tmp_path, transaction_time_out=0) as (b, client):
        _topic(b, TOPIC)
        half = await _half(b, client)
        copy = await _copy(b)
        assert await _end(b, client, half, COMMIT) == (ResponseCode.SUCCESS, "")
        await b.transaction_check.check_once()  # walks past the copy; the op progress past the op
        rolled = await _half(b, client, b"rolled back")
        assert (await _end(b, client, rolled, ROLLBACK))[0] == ResponseCode.SUCCESS
        await b.transaction_check.check_once()
    async with inproc_broker(tmp_path, transaction_time_out=0) as (b, client):
        assert not b.transactions.ended
        code, remark = await _end(b, client, copy, COMMIT, from_check=True)
        assert code == ResponseCode.SYSTEM_ERROR and ALREADY in remark, remark
        code, remark = await _end(b, client, rolled, COMMIT)
        assert code == ResponseCode.SYSTEM_ERROR and ALREADY in remark, remark
        assert _count(b) == 1


async def test_a_half_message_lookalike_inside_a_body_is_not_committed(tmp_path: Path) -> None:
    """END_TRANSACTION decoded whatever sat at commitLogOffset: a stored-entry lookalike in a plain message's
    body was committed into a read-only topic, at any queue id."""
    async with inproc_broker(tmp_path) as (b, client):
        _topic(b, "Carrier")
        _topic(b, "Victim", perm=4)
        props = {P.REAL_TOPIC: "Victim", P.REAL_QID: "0", P.PGROUP: "EVIL", P.UNIQ_KEY: "F" * 32, P.TRAN_MSG: "true"}

        def forged(at: int) -> bytes:
            return encode_stored(MessageExt(topic=HALF_TOPIC, body=b"forged", properties=props, queue_offset=0,
                                            commit_log_offset=at, born_timestamp=1, born_host=("10.9.9.9", 1),
                                            store_host=("10.9.9.9", 2), store_timestamp=1))

        start = b.store.max_phy_offset
        assert (await _send(b, client, "Carrier", forged(0), {P.UNIQ_KEY: "C" * 32})).code == ResponseCode.SUCCESS
        inside = bytes(b.store.commitlog.entry(start)).find(forged(0))
        at = b.store.max_phy_offset + inside  # the next carrier's entry has the same layout
        assert (await _send(b, client, "Carrier", forged(at), {P.UNIQ_KEY: "C" * 32})).code == ResponseCode.SUCCESS
        assert b.store.look_message_by_offset(at).topic == HALF_TOPIC  # the lookalike decodes as a half message
        assert await _end(b, client, (0, at), COMMIT, group="EVIL") == (
            ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        assert _count(b, "Victim") == 0


async def test_a_commit_to_a_queue_the_real_topic_no_longer_has_is_refused(tmp_path: Path) -> None:
    async with inproc_broker(tmp_path) as (b, client):
        _topic(b, TOPIC, queues=4)
        half = await _half(b, client, queue_id=3)
        _topic(b, TOPIC, queues=2)
        code, remark = await _end(b, client, half, COMMIT)
        assert code == ResponseCode.SYSTEM_ERROR and "queueId[3] is illegal" in remark, remark
        assert _count(b, TOPIC, 3) == 0 and not (tmp_path / "store" / "consumequeue" / TOPIC / "3").exists()
        assert await _end(b, client, half, ROLLBACK) == (ResponseCode.SUCCESS, "")  # it can still be rolled back
