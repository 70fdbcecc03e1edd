"""Before a returning master serves: take the newer committed offsets its slaves took while it was down.

While a master is down, consumers read from its slave and commit their offsets there (the slave
accepts UPDATE_CONSUMER_OFFSET). Classic RocketMQ masters come back with their old offsets, the slave's
next metadata sync overwrites the newer ones (master wins), and the group re-reads everything since the
failure. RocketMQ 5 fixes this only in slave-acting-master mode, by a pre-online step that copies the
slave's offsets back. This is that step for every master: at start, after the tables are loaded and
before the remoting server opens (so no consumer and no slave sync sees the old offsets), it asks the
name servers which slaves its broker group has (GET_BROKER_CLUSTER_INFO), asks each for
GET_ALL_CONSUMER_OFFSET, and keeps per queue the larger of its own and the slave's committed offset.

Only for a topic in its topic table and a group in its subscription groups: the slave's sync adds and
overwrites keys but never removes one, so the slave still holds the offsets of a group deleted with
cleanOffset, of a topic deleted in the broker, or of a group whose config is gone, and they must not come
back. A group's config is made at a consumer's heartbeat while autoCreateSubscriptionGroup is on, so a group
that consumed from this master has one; a group first seen while the master was down, or one that only
committed offsets, has none here and starts over. What is left out is logged, with why.

Only a restarted master takes them: a master paused or cut off long enough to leave the route, which then
resumes, does not, and its slave's next sync overwrites what the consumers committed to the slave meanwhile,
as in Apache 4.9.7.

A fresh cluster is unchanged: no slave is registered yet, or the slave has nothing newer. Everything is
bounded by the registration timeout, and any failure (no name server, a slave that does not answer) is
logged and skipped: the master then starts with its own offsets, as classic RocketMQ does. The cost of
"max wins": an offset reset backwards on the master less than one slave-sync period (10 s) before the
master stops is undone when it returns.
"""

from __future__ import annotations

import logging

from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.log_limiter import one_line
from mqtools.remoting.bodies import ClusterInfo, ConsumerOffsetSerializeWrapper
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingError
from mqtools.server.broker.consumer_offsets import split_key
from mqtools.server.broker.context import BrokerContext

log = logging.getLogger("mq.broker.pre_online")


async def group_slaves(broker: BrokerContext, timeout: float) -> list[str]:
    """Addresses of this broker group's slaves that any name server knows (union, sorted)."""
    answers = await broker.client.invoke_each_namesrv(
        lambda: RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), timeout)
    found: set[str] = set()
    for namesrv, resp in answers.items():
        if isinstance(resp, RemotingError) or resp.code != ResponseCode.SUCCESS:
            log.info("name server %s could not list broker %s's slaves: %s", namesrv, broker.config.broker_name,
                     resp if isinstance(resp, RemotingError) else resp.remark)
            continue
        data = ClusterInfo.from_json(resp.body or b"{}").broker_addr_table.get(broker.config.broker_name)
        if data is not None:
            found |= {addr for bid, addr in data.broker_addrs.items()
                      if bid not in (MASTER_ID, broker.config.broker_id)}
    return sorted(found)


def on_this_master(broker: BrokerContext, table: dict[str, dict[int, int]]
                   ) -> tuple[dict[str, dict[int, int]], list[tuple[str, str]]]:
    """The entries of a slave's table whose topic and group this master has, and the keys of the rest with why."""
    kept: dict[str, dict[int, int]] = {}
    left_out: list[tuple[str, str]] = []
    for key, offsets in table.items():
        topic, group = split_key(key)
        if topic not in broker.topics:
            left_out.append((key, "topic not on this master"))
        elif group not in broker.groups.table:
            left_out.append((key, "subscription group not on this master"))
        else:
            kept[key] = offsets
    return kept, left_out


async def take_offsets_from_slaves(broker: BrokerContext, timeout: float) -> int:
    """The pre-online step; returns how many queue offsets moved forward (0: nothing to take)."""
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)  # what a returning master took belongs in its log
    if broker.config.is_slave or not broker.config.namesrv_list():
        return 0
    try:
        slaves = await group_slaves(broker, timeout)
    except Exception as exc:  # noqa: BLE001 - taking offsets must never stop a master from starting
        log.warning("cannot list the slaves of %s, starting with own offsets: %s", broker.config.broker_name, exc)
        return 0
    taken = 0
    for addr in slaves:
        try:
            resp = await broker.client.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_CONSUMER_OFFSET),
                                              timeout)
            if resp.code != ResponseCode.SUCCESS:
                raise ValueError(f"code {resp.code}: {resp.remark}")
            table = ConsumerOffsetSerializeWrapper.from_json(resp.body or b"{}").offset_table
        except Exception as exc:  # noqa: BLE001 - as above: a bad answer skips that slave
            log.warning("slave %s gave no consumer offsets, skipping it: %s", addr, exc)
            continue
        kept, left_out = on_this_master(broker, {k: v for k, v in table.items() if v is not None})
        if left_out:
            log.info("left out %d offset entries of slave %s that this master deleted or never had: %s",
                     len(left_out), addr, one_line("; ".join(f"{key} ({why})" for key, why in left_out)))
        moved = broker.offsets.take_newer(kept)
        taken += len(moved)
        for key, queue_id, old, new in moved:
            log.info("offset of %s[%d] taken from slave %s: %s -> %d", key, queue_id, addr,
                     "none" if old is None else old, new)
    if taken:
        await broker.offsets.persist_async()
        log.info("took %d newer committed offsets from the slaves %s before serving", taken, ", ".join(slaves))
    return taken
