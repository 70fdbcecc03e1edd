"""A push consumer whose group an operator switched off: it keeps pulling, as Apache's does, and says so once per
broker set, again only after a pull there went through; other failed pulls stay in the debug log."""

from __future__ import annotations

import asyncio
import logging

import pytest
from unit.client.fake_remoting import FakeRemoting, fake_instance, route_data

from mqtools.client import push_consumer
from mqtools.client.process_queue import ProcessQueue
from mqtools.client.push_consumer import PushConsumer
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

REFUSED = "subscription group no permission, G"


async def test_a_switched_off_group_is_warned_of_once_until_a_pull_goes_through(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(push_consumer, "PULL_RETRY_DELAY", 0)
    # refused three times, one pull answered, refused twice more, a topic refusal (not the group's), then stop
    answers = [REFUSED] * 3 + [None] + [REFUSED] * 2 + ["the topic[T] pulling message is forbidden"]
    pq = ProcessQueue(MessageQueue("T", "broker-a", 0), 0)

    async def broker(_addr: str, cmd: RemotingCommand, _timeout: float) -> RemotingCommand:
        if cmd.code != RequestCode.PULL_MESSAGE:
            return cmd.response()
        remark = answers.pop(0)
        pq.dropped = not answers
        if remark is None:
            return cmd.response(ResponseCode.PULL_NOT_FOUND, None, {"nextBeginOffset": "0", "minOffset": "0",
                                                                     "maxOffset": "0"})
        return cmd.response(ResponseCode.NO_PERMISSION, remark)

    consumer = PushConsumer("G", instance=fake_instance(FakeRemoting({"T": route_data({"broker-a": 1})}, broker)))
    consumer.subscribe("T")
    with caplog.at_level(logging.DEBUG, logger=push_consumer.__name__):
        await asyncio.wait_for(consumer._pull_loop(pq), 10)
    assert not answers
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    said = f"broker-a: group G may not consume there (consumeEnable=false); pulls go on until it may: {REFUSED}"
    assert warned == [said] * 2
    assert any("forbidden" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)
