"""POLLING_INFO (200055) with Apache 5.5's semantics (PollingInfoProcessor): how many POPs wait on a queue.

The checks are a POP's (broker and topic readable, queue id within readQueueNums, group known and allowed
to consume), so a client learns the same refusals it would get popping; the count is the group's POP
requests parked for that topic and queue id (-1: those that asked for any queue). Served under 200055 and
the 16-bit form the binary header serializer makes of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqtools.remoting.assignment import PollingInfoRequestHeader, PollingInfoResponseHeader
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.processors.pop import PopProcessor, register_both

if TYPE_CHECKING:
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection


class PollingInfoProcessor:
    def __init__(self, pop: PopProcessor) -> None:
        self.pop = pop

    def polling_info(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = PollingInfoRequestHeader.from_ext(req.ext_fields)
        refusal = self.pop.refusal(req, h.consumer_group, h.topic, h.queue_id)
        if isinstance(refusal, RemotingCommand):
            return refusal
        num = self.pop.s.polling.parked_pops(h.consumer_group, h.topic, h.queue_id)
        return req.response(ResponseCode.SUCCESS, None, PollingInfoResponseHeader(num).to_ext())


def register(server: RemotingServer, pop: PopProcessor) -> PollingInfoProcessor:
    proc = PollingInfoProcessor(pop)
    register_both(server, RequestCode.POLLING_INFO, proc.polling_info)
    return proc
