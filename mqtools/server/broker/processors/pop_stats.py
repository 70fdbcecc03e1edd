"""mq's private GET_POP_IN_FLIGHT (40003): what a POP group has in flight on this broker (remoting/pop_stats.py).

Normal POP: the revive service's pending checkpoints of the group (as it last read the revive queues, a
fraction of a second behind), each unacknowledged message counted as in flight while invisible and as
revive-due once its invisible time is over. FIFO POP: the batch holding each queue, its unacknowledged
messages while the batch is invisible. A slave revives nothing and keeps no ledgers, so it answers
``tracked: false`` rather than zeros that would read as "nothing in flight".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.pop_stats import PopInFlightBody, PopInFlightRequestHeader, PopQueueInFlight
from mqtools.server.broker.pop.ledger import ReviveLedger
from mqtools.server.broker.processors.pop import PopProcessor

if TYPE_CHECKING:
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection


class PopStatsProcessor:
    def __init__(self, pop: PopProcessor) -> None:
        self.pop = pop

    def in_flight(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = PopInFlightRequestHeader.from_ext(req.ext_fields)
        body = self.collect(h.consumer_group, h.topic, int(self.pop.c.clock() * 1000))
        return req.response(ResponseCode.SUCCESS, None, body=body.to_json())

    def collect(self, group: str, topic: str | None, now_ms: int) -> PopInFlightBody:
        s = self.pop.s
        tracked = not self.pop.c.config.is_slave and bool(s.revive.ledgers)
        queues: dict[tuple[str, int], PopQueueInFlight] = {}

        def row(t: str, qid: int, orderly: bool = False) -> PopQueueInFlight:
            found = queues.get((t, qid))
            if found is None:
                found = queues[(t, qid)] = PopQueueInFlight(t, qid, orderly=orderly)
            return found

        for ledger in s.revive.ledgers.values():
            for ck in ledger.pending.values():
                if ck.cid != group or (topic is not None and ck.topic != topic):
                    continue
                unacked = len(ReviveLedger.unacked(ck))
                if not unacked:
                    continue
                r = row(ck.topic, ck.queue_id)
                if ck.revive_time <= now_ms:
                    r.revive_due += unacked
                else:
                    r.in_flight += unacked
        for (t, g, qid), batch in s.order.batches.items():
            if g != group or (topic is not None and t != topic):
                continue
            if not batch.complete and now_ms < batch.invisible_until:
                row(t, qid, True).in_flight += len(batch.offsets) - len(batch.acked)
        popped = bool(queues) or bool(s.popped_topics(group))
        rows = sorted(queues.values(), key=lambda q: (q.topic, q.queue_id))
        return PopInFlightBody(tracked, popped, s.revive.revived.get(group, 0), rows)


def register(server: RemotingServer, pop: PopProcessor) -> PopStatsProcessor:
    proc = PopStatsProcessor(pop)
    server.register(RequestCode.GET_POP_IN_FLIGHT, proc.in_flight)
    return proc
