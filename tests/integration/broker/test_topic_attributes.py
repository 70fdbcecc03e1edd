"""RocketMQ 5's topic attributes and the single-item config reads its proxy uses: `+message.type=FIFO` kept on
create and altered on update as Apache's AttributeUtil does (refusals with its remarks), GET_TOPIC_CONFIG (351)
and GET_SUBSCRIPTIONGROUP_CONFIG (352) answered, an in-process broker driven over loopback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.inprocbroker import inproc_broker

from mqtools.common.perm import PERM_RW
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import CreateTopicRequestHeader, TopicRequestHeader
from mqtools.server.broker.app import BrokerController

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[tuple[BrokerController, RemotingClient]]:
    async with inproc_broker(tmp_path, {"mappedFileSizeCommitLog": str(1024 * 1024)}) as b:
        yield b


async def create(b: tuple[BrokerController, RemotingClient], topic: str, attributes: str | None) -> RemotingCommand:
    h = CreateTopicRequestHeader(topic=topic, default_topic="TBW102", read_queue_nums=2, write_queue_nums=2,
                                 perm=PERM_RW, topic_filter_type="SINGLE_TAG", attributes=attributes)
    return await b[1].invoke(b[0].broker_addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h.to_ext()),
                             10.0)


async def topic_config(b: tuple[BrokerController, RemotingClient], topic: str) -> RemotingCommand:
    return await b[1].invoke(b[0].broker_addr, RemotingCommand.request(
        RequestCode.GET_TOPIC_CONFIG, {**TopicRequestHeader(topic).to_ext(), "lo": "true"}), 10.0)


async def test_attributes_are_kept_altered_and_refused_as_apaches_broker_does(broker) -> None:
    assert (await create(broker, "AttrT", "+message.type=FIFO")).code == ResponseCode.SUCCESS
    got = await topic_config(broker, "AttrT")
    assert got.code == ResponseCode.SUCCESS
    assert json.loads(got.body)["attributes"] == {"message.type": "FIFO"}
    for attributes, remark in (
            ("+message.type=MIXED", "MIXED message type is not supported."),
            ("+queue.type=BatchCQ", "attempt to update an unchangeable attribute. key: queue.type"),
            ("+color=red", "unsupported key: color"),
            ("+message.type=BLUE", "value is not in set: [DELAY, FIFO, MIXED, NORMAL, TRANSACTION, UNSPECIFIED]"),
            ("-cleanup.policy", "attempt to delete a nonexistent key: cleanup.policy"),
            ("message.type", "delete attribute format is wrong: message.type")):
        refused = await create(broker, "AttrT", attributes)
        assert (refused.code, refused.remark) == (
            ResponseCode.INVALID_PARAMETER if "MIXED" in attributes else ResponseCode.SYSTEM_ERROR, remark), attributes
    assert json.loads((await topic_config(broker, "AttrT")).body)["attributes"] == {"message.type": "FIFO"}
    assert (await create(broker, "AttrT", "+message.type=NORMAL")).code == ResponseCode.SUCCESS
    assert (await create(broker, "AttrT", "-message.type")).code == ResponseCode.SUCCESS
    assert json.loads((await topic_config(broker, "AttrT")).body)["attributes"] == {}
    new = await create(broker, "AttrNew", "-message.type")
    assert (new.code, new.remark) == (ResponseCode.SYSTEM_ERROR,
                                      "only add attribute is supported while creating topic. key: message.type")
    assert (await topic_config(broker, "AttrNew")).code == ResponseCode.TOPIC_NOT_EXIST
    # the attributes survive a restart with the rest of the topic table (topics.json)
    assert json.loads(broker[0].topics.encode())["topicConfigTable"]["AttrT"]["attributes"] == {}


async def test_one_groups_config_is_answered_and_auto_created_only_where_allowed(broker) -> None:
    controller, client = broker

    async def ask(group: str) -> RemotingCommand:
        return await client.invoke(controller.broker_addr, RemotingCommand.request(
            RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": group}), 10.0)

    resp = await ask("NewGroup")  # autoCreateSubscriptionGroup is on by default, as Apache's
    assert resp.code == ResponseCode.SUCCESS and json.loads(resp.body)["groupName"] == "NewGroup"
    controller.groups.auto_create = False
    resp = await ask("NoSuchGroup")
    assert (resp.code, resp.remark) == (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker")
    assert "NoSuchGroup" not in controller.groups.table
