"""PEEK_MESSAGE and NOTIFICATION (Apache's PeekMessageProcessor and NotificationProcessor), beside POP.

PEEK returns what a POP would take next without taking it: no checkpoint, no offset moved. NOTIFICATION
answers hasMsg: whether a POP of the group would find something now; with pollTime it is parked like a
POP (on the same queues) and answered when a message arrives or the time ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.pop import (
    INIT_MODE_MIN,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PeekMessageRequestHeader,
    PopMessageResponseHeader,
)
from mqtools.server.broker.pop.long_polling import Wait
from mqtools.server.broker.processors.pop import MAX_POP_NUMS, PopProcessor, register_both
from mqtools.server.store.results import GetMessageStatus

if TYPE_CHECKING:
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection


class PeekNotificationProcessor:
    def __init__(self, pop: PopProcessor) -> None:
        self.pop = pop

    # ------------------------------------------------------------------ PEEK_MESSAGE

    def peek(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """The messages a POP would take next, without taking them (no checkpoint, no offset moved)."""
        h = PeekMessageRequestHeader.from_ext(req.ext_fields)
        if not 0 < h.max_msg_nums <= MAX_POP_NUMS:
            return req.response(ResponseCode.INVALID_PARAMETER, f"maxMsgNums must be 1..{MAX_POP_NUMS}")
        tc = self.pop.refusal(req, h.consumer_group, h.topic, h.queue_id)
        if isinstance(tc, RemotingCommand):
            return tc
        parts: list[bytes | memoryview] = []
        rest = 0
        qids = [h.queue_id] if h.queue_id >= 0 else list(range(tc.read_queue_nums))
        for qid in qids:
            offset = self.pop.pop_offset(h.consumer_group, h.topic, qid, INIT_MODE_MIN, commit=False)
            want = h.max_msg_nums - len(parts)
            if want <= 0:
                rest += max(self.pop.c.store.get_max_offset_in_queue(h.topic, qid) - offset, 0)
                continue
            result = self.pop.c.store.get_message(h.consumer_group, h.topic, qid, offset, want)
            parts.extend(result.buffers)
            rest += max(result.max_offset - result.next_begin_offset, 0)
        header = PopMessageResponseHeader(0, 0, 0, rest)
        if not parts:
            return req.response(
                ResponseCode.PULL_NOT_FOUND, GetMessageStatus.NO_MESSAGE_IN_QUEUE.name, header.to_ext()
            )
        return req.response(
            ResponseCode.SUCCESS, GetMessageStatus.FOUND.name, header.to_ext(), b"".join(parts)
        )

    # ------------------------------------------------------------------ NOTIFICATION

    def notification(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand | None:
        return self.process_notification(conn, req, None)

    def process_notification(
        self, conn: RemotingConnection, req: RemotingCommand, deadline: float | None
    ) -> RemotingCommand | None:
        """Whether a POP would find something now; with pollTime, held until it would or the time ends."""
        h = NotificationRequestHeader.from_ext(req.ext_fields)
        tc = self.pop.refusal(req, h.consumer_group, h.topic, h.queue_id)
        if isinstance(tc, RemotingCommand):
            return tc
        now_ms = self.pop.s.now_ms()
        waits: list[Wait] = []
        for topic, qid in self.pop.sources(h.consumer_group, tc, h.queue_id, bool(h.order)):
            offset = self.pop.pop_offset(h.consumer_group, topic, qid, INIT_MODE_MIN, commit=False)
            if h.order and self.pop.s.order.blocked((topic, h.consumer_group, qid), now_ms):
                waits.append((topic, qid, offset))
            elif self.pop.c.store.get_max_offset_in_queue(topic, qid) > offset:
                return req.response(ResponseCode.SUCCESS, None, NotificationResponseHeader(True).to_ext())
            else:
                waits.append((topic, qid, offset))
        if h.poll_time > 0:
            until = deadline if deadline is not None else self.pop.c.clock() + h.poll_time / 1000
            if self.pop.c.clock() < until:
                if self.pop.s.polling.park(conn, req, until, waits, None, self.process_notification, latest=True):
                    return None
                return req.response(ResponseCode.SUCCESS, None, NotificationResponseHeader(False, True).to_ext())
        return req.response(ResponseCode.SUCCESS, None, NotificationResponseHeader(False).to_ext())


def register(server: RemotingServer, pop: PopProcessor) -> PeekNotificationProcessor:
    proc = PeekNotificationProcessor(pop)
    register_both(server, RequestCode.PEEK_MESSAGE, proc.peek)
    register_both(server, RequestCode.NOTIFICATION, proc.notification)
    return proc
