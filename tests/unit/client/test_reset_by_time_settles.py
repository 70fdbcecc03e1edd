"""A reset by time (`offset reset --to-time/--latest`, `offset skip`, `mq top`'s reset, mqadmin resetOffsetByTime)
asks every master before it writes, and says where it moved and where not. Found in review on a 2m-2s-sync
cluster: a group with offsets on broker-a only, nobody online, got CONSUMER_NOT_ONLINE from broker-a and SYSTEM_ERROR
"THe consumer group <G> not exist" from broker-b; broker-a's plan was committed at once, then broker-b's answer was
raised and broker-a's move went unsaid (or nothing moved, by the route's order)."""

from __future__ import annotations

import pytest
from unit.client.fake_remoting import FakeRemoting, fake_instance

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import PartialWriteError
from mqtools.common.exitcodes import EXIT_UNREACHABLE
from mqtools.remoting.bodies import (
    BrokerData,
    Connection,
    ConsumerConnection,
    MessageQueue,
    QueueData,
    ResetOffsetBody,
    TopicRouteData,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectError, RemotingTimeoutError

A, B = "a:10911", "b:10911"
NAMES = {A: "broker-a", B: "broker-b"}
END = 7
"""Every queue's end (GET_MAX_OFFSET), where --latest moves the group."""
NOT_ONLINE = (ResponseCode.CONSUMER_NOT_ONLINE, "Consumer not online, so can not reset offset, Group: G")
NEVER_ONLINE = (ResponseCode.SYSTEM_ERROR, "THe consumer group <G> not exist")
PUSHED = (ResponseCode.SUCCESS, "")


class Brokers:
    """Two masters, one queue each, in memory: each one's answer to the reset request (a code and remark, or a
    transport failure), the commits each took, and a master whose commits fail."""

    def __init__(self, reset: dict[str, tuple[int, str] | Exception]) -> None:
        self.reset = reset
        self.committed: dict[str, int] = {}
        self.commit_fails: dict[str, Exception] = {}
        #: Masters with a consumer of the group online (GET_CONSUMER_CONNECTION_LIST answers it).
        self.online: set[str] = set()

    async def answer(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        if cmd.code == RequestCode.INVOKE_BROKER_TO_RESET_OFFSET:
            given = self.reset[addr]
            if isinstance(given, Exception):
                raise given
            code, remark = given
            if code != ResponseCode.SUCCESS:
                return cmd.response(code, remark)
            self.committed[addr] = END  # an online consumer's broker commits and pushes itself
            body = ResetOffsetBody({MessageQueue("T", NAMES[addr], 0): END}).to_json()
            return cmd.response(ResponseCode.SUCCESS, body=body)
        if cmd.code == RequestCode.GET_CONSUMER_CONNECTION_LIST and addr in self.online:
            body = ConsumerConnection([Connection("10.0.0.9@1", "10.0.0.9:50000")]).to_json()
            return cmd.response(ResponseCode.SUCCESS, body=body)
        if cmd.code == RequestCode.QUERY_CONSUMER_OFFSET:
            if addr in self.committed:
                return cmd.response(ResponseCode.SUCCESS, ext_fields={"offset": str(self.committed[addr])})
            return cmd.response(ResponseCode.QUERY_NOT_FOUND, "not found")
        if cmd.code == RequestCode.GET_MAX_OFFSET:
            return cmd.response(ResponseCode.SUCCESS, ext_fields={"offset": str(END)})
        if cmd.code == RequestCode.UPDATE_CONSUMER_OFFSET:
            if addr in self.commit_fails:
                raise self.commit_fails[addr]
            self.committed[addr] = int(cmd.ext_fields["commitOffset"])
            return cmd.response(ResponseCode.SUCCESS)
        return cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "fake broker")


def session(brokers: Brokers, monkeypatch: pytest.MonkeyPatch) -> tuple[MQAdmin, FakeRemoting]:
    route = TopicRouteData(queue_datas=[QueueData("broker-a", 1, 1), QueueData("broker-b", 1, 1)],
                           broker_datas=[BrokerData("C", "broker-a", {0: A}), BrokerData("C", "broker-b", {0: B})])
    remoting = FakeRemoting({"T": route}, brokers.answer)
    admin = MQAdmin("namesrv:9876")
    admin.instance = fake_instance(remoting)

    async def configured(group: str) -> None:
        return None

    monkeypatch.setattr(admin.groups, "subscription_group", configured)
    return admin, remoting


async def test_a_group_never_online_on_one_master_is_moved_on_both(monkeypatch: pytest.MonkeyPatch) -> None:
    """Apache 5's resetOffsetNewConcurrent takes that SYSTEM_ERROR as "never online": the offsets are committed
    there as they are where nobody is online."""
    brokers = Brokers({A: NOT_ONLINE, B: NEVER_ONLINE})
    brokers.committed[A] = 3
    admin, _ = session(brokers, monkeypatch)
    rows = await admin.offsets.reset_offset_by_time("G", "T", -1)
    assert brokers.committed == {A: END, B: END}
    assert [(r.queue.broker_name, r.old, r.new, r.pushed) for r in rows] == [
        ("broker-a", 3, END, False), ("broker-b", None, END, False)]


async def test_a_master_not_answering_the_ask_moves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every master is asked before anything is committed: broker-a's plan waited for no one and was written."""
    brokers = Brokers({A: NOT_ONLINE, B: RemotingTimeoutError(B, 3.0, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET)})
    brokers.committed[A] = 3
    admin, remoting = session(brokers, monkeypatch)
    with pytest.raises(PartialWriteError) as raised:
        await admin.offsets.reset_offset_by_time("G", "T", -1)
    assert brokers.committed == {A: 3}
    assert remoting.broker_requests(RequestCode.UPDATE_CONSUMER_OFFSET) == []
    assert raised.value.applied == [] and list(raised.value.failed) == ["broker-b"]
    assert raised.value.exit_code == EXIT_UNREACHABLE
    assert "applied on no broker" in str(raised.value) and "broker-b: no answer" in str(raised.value)


async def test_a_commit_failing_after_another_master_moved_names_both(monkeypatch: pytest.MonkeyPatch) -> None:
    brokers = Brokers({A: PUSHED, B: NOT_ONLINE})
    brokers.commit_fails[B] = RemotingConnectError(B, "connection refused")
    admin, _ = session(brokers, monkeypatch)
    with pytest.raises(PartialWriteError) as raised:
        await admin.offsets.reset_offset_by_time("G", "T", -1)
    assert brokers.committed == {A: END}
    assert raised.value.applied == ["broker-a"] and list(raised.value.failed) == ["broker-b"]
    assert raised.value.exit_code == EXIT_UNREACHABLE
    assert str(raised.value) == ("resetting the offsets of group G on topic T: applied on broker-a; "
                                 "broker-b: no answer, not applied: connection refused")



async def test_a_queue_without_an_offset_where_consumers_are_online_is_not_committed_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The broker's "THe consumer group <G> not exist" says only that a queue has no committed offset (Apache's
    Broker2Client too): with the group's consumers online there, a direct commit would be overwritten by them, so
    that set is named, not moved."""
    brokers = Brokers({A: PUSHED, B: NEVER_ONLINE})
    brokers.online.add(B)
    admin, remoting = session(brokers, monkeypatch)
    with pytest.raises(PartialWriteError) as raised:
        await admin.offsets.reset_offset_by_time("G", "T", -1)
    assert brokers.committed == {A: END}
    assert raised.value.applied == ["broker-a"] and list(raised.value.failed) == ["broker-b"]
    assert "its consumers are online" in str(raised.value)
    assert [s.addr for s in remoting.broker_requests(RequestCode.UPDATE_CONSUMER_OFFSET)] == []
