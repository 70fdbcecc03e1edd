"""Messages: by offset msgId, by key, by unique key, at a queue offset."""

from __future__ import annotations

import time

from mqtools.client.admin.base import AdminBase, unreachable
from mqtools.client.client_api import decode_pull_body, pull_once
from mqtools.client.errors import MQClientError
from mqtools.client.subscription import parse_subscription
from mqtools.common import properties as P
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.ids import decode_offset_msg_id
from mqtools.common.message import MessageExt
from mqtools.common.topics import TOOLS_CONSUMER_GROUP
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import UNIQUE_KEY_QUERY, QueryMessageRequestHeader, ViewMessageRequestHeader


class MessageAdmin(AdminBase):
    """Messages: by offset msgId, by key, by unique key, at a queue offset."""

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """By offsetMsgId: the id names the storing broker and the commit log offset."""
        try:
            (host, port), offset = decode_offset_msg_id(offset_msg_id)
        except ValueError as exc:
            raise MQClientError(f"not an offset message id: {offset_msg_id!r} ({exc})") from None
        resp = await self.call(f"{host}:{port}", RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset).to_ext())
        messages = decode_pull_body(resp.body)
        if not messages:
            raise MQClientError(f"no message at {offset_msg_id}")
        return messages[0]

    async def query_by_key(self, topic: str, key: str, *, max_num: int = 64, begin_ms: int = 0,
                           end_ms: int | None = None) -> list[MessageExt]:
        """QUERY_MESSAGE on every broker of the topic: messages whose KEYS hold `key`, oldest first."""
        return await self._query(topic, key, max_num, begin_ms, end_ms, unique=False)

    async def query_by_unique_key(self, topic: str, uniq_key: str, *, begin_ms: int = 0,
                                  end_ms: int | None = None) -> list[MessageExt]:
        """By msgId (the producer's UNIQ_KEY); more than one hit means the message was sent again."""
        found = await self._query(topic, uniq_key, 32, begin_ms, end_ms, unique=True)
        return [m for m in found if m.properties.get(P.UNIQ_KEY) == uniq_key]

    async def _query(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int | None, *,
                     unique: bool) -> list[MessageExt]:
        end = end_ms if end_ms is not None else int(time.time() * 1000) + 60_000
        ext = QueryMessageRequestHeader(topic, key, max_num, begin_ms, end).to_ext()
        if unique:
            ext[UNIQUE_KEY_QUERY] = "true"
        answers = await self._each(list((await self.route_masters(topic)).values()), lambda a: self.call(
            a, RequestCode.QUERY_MESSAGE, ext, ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)))
        found = [m for r in answers.values() if r.code == ResponseCode.SUCCESS for m in decode_pull_body(r.body)]
        return sorted(found, key=lambda m: (m.store_timestamp, m.commit_log_offset))[:max_num]

    async def message_at(self, mq: MessageQueue, offset: int, group: str = TOOLS_CONSUMER_GROUP) -> MessageExt | None:
        """The message at one queue offset, None past the end or before the start of the queue."""
        if MASTER_ID not in (await self._route(mq.topic)).broker_addrs.get(mq.broker_name, {}):
            raise MQClientError(f"broker {mq.broker_name} has no master serving {mq.topic}")
        with unreachable():
            result = await pull_once(self.instance, group, mq, parse_subscription(mq.topic, "*"), offset, max_nums=1)
        return next((m for m in result.messages if m.queue_offset == offset), None)
