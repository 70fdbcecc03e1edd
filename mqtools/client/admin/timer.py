"""Timer messages (RIP-43) across the cluster: `mq admin timer status`.

Every broker set (of one cluster, or the one broker asked for) is read from its master, else a slave
(AdminBase.read_sets): the timer checkpoint, the timer metrics and the runtime info's timer figures, from
the same replica. A set no replica answered for is named in the document, which is then partial.
"""

from __future__ import annotations

import asyncio

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.timer import TimerBrokerStatus, TimerStatus
from mqtools.client.errors import UnknownTargetError
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.timer import TimerCheckpointBody, TimerMetricsBody

#: What a broker without a timer store (SYSTEM_ERROR) or without the requests (RocketMQ 4) answers.
_NO_TIMER = (ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR, ResponseCode.REQUEST_CODE_NOT_SUPPORTED)


class TimerAdmin(AdminService):
    """The timer wheel of each broker set: delivery progress, pending messages per topic, lag."""

    async def timer_status(self, cluster: str | None = None, broker_addr: str | None = None) -> TimerStatus:
        """Every broker set (of `cluster`), or the set of `broker_addr` read at that address only."""
        sets = await self.admin.all_sets(cluster)
        if broker_addr is not None:
            named = [n for n, addrs in sets.items() if broker_addr in addrs.values()]
            if not named:
                raise UnknownTargetError(f"no broker {broker_addr} registered with the name servers")
            sets = {named[0]: {i: a for i, a in sets[named[0]].items() if a == broker_addr}}
        read = await self.admin.read_sets(sets, self._read_one)
        brokers = []
        for name, r in sorted(read.reads.items()):
            checkpoint, metrics, runtime, known = r.value
            brokers.append(TimerBrokerStatus.from_answers(name, r.addr, r.source, checkpoint, metrics, runtime,
                                                          known=known))
        return TimerStatus(brokers, read.unreachable)

    async def _read_one(self, addr: str
                        ) -> tuple[TimerCheckpointBody | None, TimerMetricsBody | None, dict[str, str], bool]:
        """(checkpoint, metrics, runtime table, known) of one replica; unreachability propagates."""
        ck_resp, metrics_resp, runtime = await asyncio.gather(
            self.admin.call(addr, RequestCode.GET_TIMER_CHECK_POINT, ok=_NO_TIMER),
            self.admin.call(addr, RequestCode.GET_TIMER_METRICS, ok=_NO_TIMER),
            self.admin.brokers.broker_runtime_info(addr))
        known = ResponseCode.REQUEST_CODE_NOT_SUPPORTED not in (ck_resp.code, metrics_resp.code)
        checkpoint: TimerCheckpointBody | None = None
        metrics: TimerMetricsBody | None = None
        if ck_resp.code == ResponseCode.SUCCESS and ck_resp.body:
            try:
                checkpoint = TimerCheckpointBody.decode(ck_resp.body)
            except ValueError:
                checkpoint = None
        if metrics_resp.code == ResponseCode.SUCCESS and metrics_resp.body:
            try:
                metrics = TimerMetricsBody.from_json(metrics_resp.body)
            except ValueError:
                metrics = None
        return checkpoint, metrics, runtime.raw, known
