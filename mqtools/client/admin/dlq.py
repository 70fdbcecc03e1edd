"""Dead letters: what a group gave up on (%DLQ%<group>), and putting messages back for that group.

A resent message goes to the group's retry topic (%RETRY%<group>), not to the original topic: only
that group's consumers receive it again (every RocketMQ push consumer subscribes to its retry topic),
other groups of the original topic see nothing twice, and the consumer still sees the original topic
(the RETRY_TOPIC property) and the same msgId. The dead copy stays in the DLQ: RocketMQ never
deletes single messages.
"""

from __future__ import annotations

import time

from mqtools.client.admin.base import AdminService, masters_of
from mqtools.client.admin.models.messages import MessageHits, Resend
from mqtools.client.errors import MQClientError, TopicNotExistError
from mqtools.common import properties as P
from mqtools.common.message import MessageExt
from mqtools.common.topics import AUTO_CREATE_TOPIC_KEY, dlq_topic, retry_topic
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.headers import SendMessageResponseHeader, send_v2_fields

RESEND_GROUP = "mq_admin_dlq_resend"
#: Properties the broker or a delivery adds, which a resent copy must not carry over.
DROPPED = (P.DELAY, P.WAIT, P.CLUSTER, P.MIN_OFFSET, P.MAX_OFFSET, P.REAL_TOPIC, P.REAL_QID)


class DeadLetterAdmin(AdminService):
    """Dead letters: list a group's DLQ, put messages back on the group's retry topic."""

    async def dead_messages(self, group: str) -> MessageHits:
        """Every message in the group's DLQ, oldest first, each set read from its master, else a slave (a hung
        master failed the list); none when the group has no DLQ topic. A set no replica answers for is named."""
        try:
            spans = await self.admin.messages.topic_spans(dlq_topic(group))
        except TopicNotExistError:
            return MessageHits([])
        found: list[MessageExt] = []
        for span in spans.spans:
            async for result in self.admin.messages.read_span(span.queue, span.begin, span.end,
                                                              broker_id=span.broker_id):
                found += result.messages
        return MessageHits(sorted(found, key=lambda m: (m.store_timestamp, m.commit_log_offset)), spans.unreachable)

    async def resend_dead(self, group: str, msg_ids: list[str] | None = None) -> list[Resend]:
        """Put dead messages (all with None, else those with these msgIds or offset msgIds) back on the
        group's retry topic, one outcome per message; needs the retry topic, which a consumer creates."""
        hits = await self.dead_messages(group)
        if hits.unreachable and msg_ids is None:  # "all" would leave that set's dead letters where they are
            raise MQClientError(f"could not read {'; '.join(str(u) for u in hits.unreachable)}: resend by id, or "
                                "once every set of the DLQ answers")
        dead = hits.messages
        unread = f" as far as it could be read ({hits.unreachable[0]})" if hits.unreachable else ""
        by_id = {m.properties.get(P.UNIQ_KEY) or m.msg_id: m for m in dead}
        by_id.update({m.msg_id: m for m in dead})
        wanted = list(dict.fromkeys(msg_ids)) if msg_ids is not None else [_id(m) for m in dead]
        try:
            route = await self.admin._route(retry_topic(group))
        except TopicNotExistError:
            raise MQClientError(f"group {group} has no retry topic {retry_topic(group)}: "
                                "start one of its consumers once, then resend") from None
        masters = masters_of(route)
        if not masters:
            raise MQClientError(f"no master serves {retry_topic(group)}")
        out = []
        for msg_id in wanted:
            msg = by_id.get(msg_id)
            if msg is None:
                out.append(Resend(msg_id, None, None, None, f"not in {dlq_topic(group)}{unread}"))
                continue
            out.append(await self._resend_one(group, msg_id, msg, masters))
        return out

    async def _resend_one(self, group: str, msg_id: str, msg: MessageExt, masters: dict[str, str]) -> Resend:
        broker = next((name for name, addr in masters.items() if addr == _store_addr(msg)), min(masters))
        props = {k: v for k, v in msg.properties.items() if k not in DROPPED}
        # The broker sends a retry-topic message to the DLQ when reconsumeTimes >= maxReconsumeTimes;
        # with 0 >= 1 false for every group, the copy reaches the retry topic even when the group's
        # retryMaxTimes is 0. A later failure is judged by the group's own setting again.
        ext = send_v2_fields(RESEND_GROUP, retry_topic(group), AUTO_CREATE_TOPIC_KEY, "1", -1, 0,
                             int(time.time() * 1000), msg.flag, P.properties_to_string(props), max_reconsume_times=1)
        topic = props.get(P.RETRY_TOPIC)
        try:
            resp = await self.admin.call(masters[broker], RequestCode.SEND_MESSAGE_V2, ext, msg.body)
        except MQClientError as exc:
            return Resend(msg_id, topic, None, None, str(exc))
        stored = SendMessageResponseHeader.from_ext(resp.ext_fields)
        return Resend(msg_id, topic, MessageQueue(retry_topic(group), broker, stored.queue_id), stored.msg_id, None)


def _id(msg: MessageExt) -> str:
    return msg.properties.get(P.UNIQ_KEY) or msg.msg_id


def _store_addr(msg: MessageExt) -> str:
    host, port = msg.store_host
    return f"{host}:{port}"
