"""Message trace (mqadmin queryMsgTraceById): the records clients wrote to the trace topic about one message.

A query by key on the trace topic finds every trace message naming the message id (clients key trace
messages by the traced ids); each may hold records of other messages too, which are left out.
"""

from __future__ import annotations

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.messages import MessageTrace, TraceEntry
from mqtools.common.topics import RMQ_SYS_TRACE_TOPIC
from mqtools.common.trace_data import decode

#: The most trace messages one query reads (mqadmin reads 64).
MAX_TRACE_MESSAGES = 64


class TraceAdmin(AdminService):
    async def message_trace(self, msg_id: str, trace_topic: str = RMQ_SYS_TRACE_TOPIC) -> MessageTrace:
        found = await self.admin.messages.query_by_key(trace_topic, msg_id, max_num=MAX_TRACE_MESSAGES)
        entries = []
        for message in found.messages:
            host = message.born_host[0] if message.born_host and message.born_host[0] else None
            for record in decode(message.body.decode("utf-8", errors="replace")):
                if record.msg_id == msg_id:
                    entries.append(TraceEntry(record, host))
        entries.sort(key=lambda e: (e.record.timestamp is None, e.record.timestamp or 0))
        return MessageTrace(msg_id, trace_topic, entries, found.unreachable)
