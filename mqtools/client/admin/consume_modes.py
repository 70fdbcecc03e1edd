"""Consume modes (RocketMQ 5's message request modes): `mq admin group consume-mode`, mqadmin setConsumeMode.

A 5.x consumer with client rebalance off asks the broker how to read a topic; the broker answers PULL or
POP from the table an operator writes with SET_MESSAGE_REQUEST_MODE. Writes go to one broker or every
master of a cluster, as mqadmin's; reads ask each set's master, else a slave (which copies the table from
its master), and name the sets no replica answered for.
"""

from __future__ import annotations

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.consume_modes import DEFAULT, NO_POP, SET, ConsumeMode, ConsumeModes
from mqtools.client.errors import MQBrokerError, MQClientError
from mqtools.remoting.assignment import (
    MODE_POP,
    MODE_PULL,
    MODES,
    MessageRequestModeTable,
    SetMessageRequestModeRequestBody,
)
from mqtools.remoting.codes import RequestCode, ResponseCode


class ConsumeModeAdmin(AdminService):
    """Which consume mode (PULL or POP) each broker serves a group's topic in, and setting it."""

    async def set_consume_mode(self, topic: str, group: str, mode: str, pop_share_queue_num: int = 0, *,
                               cluster: str | None = None, broker_addr: str | None = None) -> list[str]:
        """SET_MESSAGE_REQUEST_MODE on one broker or every master of a cluster; the addresses written."""
        if mode not in MODES:
            raise MQClientError(f"unknown consume mode {mode!r}: use {' or '.join(MODES)}")
        if pop_share_queue_num < 0:
            raise MQClientError("popShareQueueNum must be 0 or more")
        body = SetMessageRequestModeRequestBody(topic, group, mode, pop_share_queue_num).to_json()
        addrs = await self.admin._targets(cluster, broker_addr)
        await self.admin._each(addrs, lambda a: self.admin.call(a, RequestCode.SET_MESSAGE_REQUEST_MODE, body=body))
        return addrs

    async def request_mode_table(self, addr: str) -> MessageRequestModeTable | None:
        """The broker's whole table (GET_ALL_MESSAGE_REQUEST_MODE); None from a broker without one (RocketMQ 4)."""
        resp = await self.admin.call(addr, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE,
                                     ok=(ResponseCode.SUCCESS, ResponseCode.REQUEST_CODE_NOT_SUPPORTED))
        if resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            return None
        return MessageRequestModeTable.from_json(resp.body or b"{}")

    async def consume_modes(self, group: str, topic: str | None = None, cluster: str | None = None) -> ConsumeModes:
        """Per broker set: the group's mode on `topic` (PULL by default), or on every topic it has one set for."""
        read = await self.admin.read_sets(await self.admin.all_sets(cluster), self.request_mode_table)
        modes: list[ConsumeMode] = []
        for name, r in sorted(read.reads.items()):
            if r.value is None:
                modes.append(ConsumeMode(name, r.addr, r.source, topic, MODE_PULL, None, NO_POP))
                continue
            held = {t: by_group[group] for t, by_group in r.value.message_request_mode_map.items()
                    if group in by_group and (topic is None or t == topic)}
            for t, m in sorted(held.items()):
                share = m.pop_share_queue_num if m.mode == MODE_POP else None
                modes.append(ConsumeMode(name, r.addr, r.source, t, m.mode, share, SET))
            if not held:
                modes.append(ConsumeMode(name, r.addr, r.source, topic, MODE_PULL, None, DEFAULT))
        return ConsumeModes(group, topic, modes, read.unreachable)

    async def pop_groups(self) -> set[str] | None:
        """The groups some broker serves by POP on some topic; None when no broker set answered, or one refused
        (the request is an admin one: an ACL account without it still gets `group status` and `mq top`)."""
        try:
            read = await self.admin.read_sets(await self.admin.all_sets(), self.request_mode_table)
        except MQBrokerError:
            return None
        if not read.reads:
            return None
        return {group for r in read.reads.values() if r.value is not None
                for by_group in r.value.message_request_mode_map.values()
                for group, m in by_group.items() if m.mode == MODE_POP}
