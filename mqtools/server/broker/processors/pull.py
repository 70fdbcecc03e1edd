"""PULL_MESSAGE with RocketMQ's semantics (PullMessageProcessor).

Checks: broker read permission, subscription group (auto-created when allowed, must be
consume-enabled), topic existence and read permission, queue id range, and the
subscription (from the request when FLAG_SUBSCRIPTION is set, else from the consumer's
heartbeat, which must be at least as new as the request's subVersion).

Store statuses map to FOUND -> SUCCESS, NO_MATCHED_MESSAGE / MESSAGE_WAS_REMOVING ->
PULL_RETRY_IMMEDIATELY, OFFSET_FOUND_NULL / OFFSET_OVERFLOW_ONE -> PULL_NOT_FOUND,
OFFSET_OVERFLOW_BADLY / OFFSET_TOO_SMALL -> PULL_OFFSET_MOVED, an empty or missing queue
-> PULL_NOT_FOUND at offset 0 else PULL_OFFSET_MOVED. A PULL_NOT_FOUND with the suspend
flag is parked in the long-polling service and answered when a message for the queue
arrives (or at the suspend timeout) by running this processor again without suspension.
The commit-offset flag stores the consumer's offset on the first (suspendable) pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.hashing import tags_code
from mqtools.common.perm import is_readable
from mqtools.remoting.bodies import SubscriptionData, SubscriptionGroupConfig
from mqtools.remoting.codes import GROUP_CONSUME_DISABLED, RequestCode, ResponseCode
from mqtools.remoting.command import GatheredBody, RemotingCommand
from mqtools.remoting.headers import PullMessageRequestHeader, PullMessageResponseHeader
from mqtools.remoting.server import reply
from mqtools.server.broker.context import BrokerContext
from mqtools.server.broker.long_polling import HeldPull

if TYPE_CHECKING:
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4

_STATUS = {
    "FOUND": ResponseCode.SUCCESS,
    "NO_MATCHED_MESSAGE": ResponseCode.PULL_RETRY_IMMEDIATELY,
    "MESSAGE_WAS_REMOVING": ResponseCode.PULL_RETRY_IMMEDIATELY,
    "OFFSET_FOUND_NULL": ResponseCode.PULL_NOT_FOUND,
    "OFFSET_OVERFLOW_ONE": ResponseCode.PULL_NOT_FOUND,
    "OFFSET_OVERFLOW_BADLY": ResponseCode.PULL_OFFSET_MOVED,
    "OFFSET_TOO_SMALL": ResponseCode.PULL_OFFSET_MOVED,
}
_EMPTY = {"NO_MATCHED_LOGIC_QUEUE", "NO_MESSAGE_IN_QUEUE"}


class SubscriptionParseError(ValueError):
    pass


def build_subscription(topic: str, sub_string: str | None, expression_type: str | None) -> SubscriptionData:
    """FilterAPI.build: '*' or blank subscribes to everything, else 'a || b' tags."""
    if expression_type and expression_type.upper() not in ("TAG", ""):
        raise SubscriptionParseError(f"The broker does not support consumer to filter message by {expression_type}")
    text = (sub_string or "").strip()
    if not text or text == "*":
        return SubscriptionData(topic=topic, sub_string="*")
    tags = {t.strip() for t in text.split("||") if t.strip()}
    if not tags:
        raise SubscriptionParseError(f"subscription [{sub_string}] has no tags")
    return SubscriptionData(topic=topic, sub_string=text, tags_set=tags, code_set={tags_code(t) for t in tags})


def tag_filter_of(sub: SubscriptionData | None) -> Callable[[int], bool] | None:
    """ExpressionMessageFilter.isMatchedByConsumeQueue for TAG subscriptions; None = all."""
    if sub is None or sub.class_filter_mode or sub.sub_string.strip() in ("", "*"):
        return None
    codes = set(sub.code_set) or {tags_code(t) for t in sub.tags_set}
    return codes.__contains__


class PullProcessor:
    def __init__(self, controller: BrokerContext) -> None:
        self.c = controller

    def pull(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand | None:
        return self.process(conn, req, allow_suspend=True)

    def process(self, conn: RemotingConnection, req: RemotingCommand, *, allow_suspend: bool
                ) -> RemotingCommand | None:
        c = self.c
        cfg = c.config
        h = PullMessageRequestHeader.from_ext(req.ext_fields)
        if not is_readable(cfg.broker_permission):
            return req.response(ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip1}] pulling message is forbidden")
        group_cfg = c.groups.find(h.consumer_group)
        if group_cfg is None:
            return req.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                                f"subscription group [{h.consumer_group}] does not exist")
        if not group_cfg.consume_enable:
            return req.response(ResponseCode.NO_PERMISSION, GROUP_CONSUME_DISABLED + h.consumer_group)
        tc = c.topics.select(h.topic)
        if tc is None:
            return req.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist, apply first please!")
        if not is_readable(tc.perm):
            return req.response(ResponseCode.NO_PERMISSION, f"the topic[{h.topic}] pulling message is forbidden")
        if h.queue_id < 0 or h.queue_id >= tc.read_queue_nums:
            return req.response(ResponseCode.SYSTEM_ERROR,
                                f"queueId[{h.queue_id}] is illegal, topic:[{h.topic}] topicConfig.readQueueNums:"
                                f"[{tc.read_queue_nums}] consumer:[{conn.peer}]")
        sub, err = self._subscription(req, h)
        if err is not None:
            return err
        tag_filter = tag_filter_of(sub)
        result = c.store.get_message(h.consumer_group, h.topic, h.queue_id, h.queue_offset, h.max_msg_nums,
                                     tag_filter, h.max_msg_bytes or cfg.max_transfer_bytes_on_message_in_memory,
                                     per_message=False)
        resp = self._answer(req, h, result, group_cfg)
        if resp.code == ResponseCode.PULL_NOT_FOUND and allow_suspend and h.sys_flag & FLAG_SUSPEND:
            timeout_ms = h.suspend_timeout_millis if cfg.long_polling_enable else cfg.short_polling_time_mills
            c.long_polling.suspend(HeldPull(conn, req, h.topic, h.queue_id, h.queue_offset,
                                            c.clock() + max(timeout_ms, 0) / 1000.0, tag_filter))
            resp = None
        if allow_suspend and h.sys_flag & FLAG_COMMIT_OFFSET and not cfg.is_slave:
            c.offsets.commit_offset(conn.peer, h.consumer_group, h.topic, h.queue_id, h.commit_offset)
        return resp

    def _subscription(self, req: RemotingCommand, h: PullMessageRequestHeader
                      ) -> tuple[SubscriptionData | None, RemotingCommand | None]:
        if h.sys_flag & FLAG_SUBSCRIPTION:
            try:
                return build_subscription(h.topic, h.subscription, h.expression_type), None
            except SubscriptionParseError as exc:
                return None, req.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc))
        info = self.c.consumers.find(h.consumer_group)
        if info is None:
            return None, req.response(ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                      f"the consumer's group info not exist, group: {h.consumer_group}")
        sub = info.subscriptions.get(h.topic)
        if sub is None:
            return None, req.response(ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                      f"the consumer's subscription not exist, topic: {h.topic}")
        if sub.sub_version < h.sub_version:
            return None, req.response(ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        return sub, None

    def _answer(self, req: RemotingCommand, h: PullMessageRequestHeader, result: Any,
                group_cfg: SubscriptionGroupConfig) -> RemotingCommand:
        cfg = self.c.config
        name = result.status.name
        if name in _EMPTY:
            code = ResponseCode.PULL_OFFSET_MOVED if h.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        else:
            code = _STATUS.get(name, ResponseCode.SYSTEM_ERROR)
        suggest = MASTER_ID
        if cfg.slave_read_enable:
            suggest = (group_cfg.which_broker_when_consume_slowly if result.suggest_pulling_from_slave
                       else group_cfg.broker_id)
        if cfg.is_slave:
            # RocketMQ 4.x's PullMessageProcessor: a slave serves the pull like a master; without
            # slaveReadEnable it suggests the master; it applies no offset corrections, so
            # PULL_OFFSET_MOVED becomes PULL_RETRY_IMMEDIATELY unless offsetCheckInSlave.
            # PULL_NOT_FOUND stays (and long-polls): clients such as the C++ pull consumer
            # stop at NOT_FOUND but loop forever on RETRY_IMMEDIATELY.
            if not cfg.slave_read_enable:
                suggest = MASTER_ID
            if code == ResponseCode.PULL_OFFSET_MOVED and not self.c.store.config.offset_check_in_slave:
                code = ResponseCode.PULL_RETRY_IMMEDIATELY
        header = PullMessageResponseHeader(suggest, result.next_begin_offset, result.min_offset, result.max_offset)
        body = None
        if code == ResponseCode.SUCCESS:
            body = GatheredBody(result.spans, result.buffer_total_size)
            self.c.stats.on_get(h.consumer_group, h.topic, result.message_count, result.buffer_total_size)
        else:
            self.c.stats.on_get(h.consumer_group, h.topic, 0, 0)
        return req.response(code, name if code != ResponseCode.SUCCESS else None, header.to_ext(), body)

    def wake(self, held: HeldPull) -> None:
        """Answer a parked pull: run it again, without suspension, and write the response."""
        conn, req = held.conn, held.request
        if not conn.is_open:
            return
        try:
            resp = self.process(conn, req, allow_suspend=False)
        except Exception as exc:  # noqa: BLE001 - a failing wake must answer, not vanish
            resp = req.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        reply(conn, req, resp)


def register(server: RemotingServer, controller: BrokerContext) -> PullProcessor:
    proc = PullProcessor(controller)
    server.register(RequestCode.PULL_MESSAGE, proc.pull)
    return proc
