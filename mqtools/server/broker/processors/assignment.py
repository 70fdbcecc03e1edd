"""QUERY_ASSIGNMENT, SET_MESSAGE_REQUEST_MODE and GET_ALL_MESSAGE_REQUEST_MODE with Apache 5.5's semantics.

Apache's QueryAssignmentProcessor (and AdminBrokerProcessor for 402): a 5.x client with client rebalance
off asks any broker for its queues; the broker takes the topic's readable queues from the name server's
route (cached 30 s like TopicRouteInfoManager), the group's client ids from its consumer table, and
splits them with the named strategy, or by the POP rule (pop/assignment.py) when the topic's mode for
the group is POP. The answer's assignments are absent (the client keeps what it has) when the route or
the group is unknown or the strategy is not AVG / AVG_BY_CIRCLE; a broadcasting group gets every queue.
Modes live in config/messageRequestMode.json (pop/request_mode.py); setting one waits for that write.

Settings (Apache's BrokerConfig names): defaultMessageRequestMode (PULL), defaultPopShareQueueNum (-1),
serverLoadBalancerEnable (true; false gives every client every queue).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqtools.common.topics import is_retry_topic
from mqtools.remoting.assignment import (
    BROADCASTING,
    CLUSTERING,
    MODE_POP,
    MessageQueueAssignment,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from mqtools.remoting.bodies import MessageQueue, TopicRouteData
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.headers import GetRouteInfoRequestHeader
from mqtools.server.broker.context import BrokerContext
from mqtools.server.broker.pop.assignment import STRATEGIES, allocate, sort_key, subscribe_queues
from mqtools.server.broker.processors.durable import when_written

if TYPE_CHECKING:
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection

log = logging.getLogger(__name__)

#: TopicRouteInfoManager refreshes its subscribe info every 30 s.
ROUTE_TTL_S = 30.0
ROUTE_TIMEOUT_S = 3.0
LMQ_PREFIX = "%LMQ%"


class AssignmentProcessor:
    def __init__(self, c: BrokerContext) -> None:
        self.c = c
        extra = c.config.extra
        self.modes = c.request_modes
        self.balance = extra.get("serverLoadBalancerEnable", "true").strip().lower() != "false"
        self._routes: dict[str, tuple[float, set[MessageQueue]]] = {}

    # ------------------------------------------------------------------ QUERY_ASSIGNMENT

    async def query_assignment(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        body = QueryAssignmentRequestBody.from_request(req.body or b"")
        mode = self.modes.effective(body.topic, body.consumer_group)
        queues = await self._assign(body, mode)
        assignments = None
        if queues is not None:
            assignments = [MessageQueueAssignment(q, mode.mode) for q in queues]
        out = QueryAssignmentResponseBody(assignments)
        return req.response(ResponseCode.SUCCESS, None, body=out.to_json())

    async def _assign(
        self, body: QueryAssignmentRequestBody, mode: SetMessageRequestModeRequestBody
    ) -> list[MessageQueue] | None:
        """doLoadBalance: None means "no valid answer", an empty list "drop everything"."""
        topic, group = body.topic, body.consumer_group
        if body.message_model == BROADCASTING:
            found = await self.subscribe_info(topic)
            return sorted(found, key=sort_key) if found is not None else None
        if body.message_model != CLUSTERING:
            return []
        if topic.startswith(LMQ_PREFIX):
            mqs: set[MessageQueue] | None = {MessageQueue(topic, self.c.config.broker_name, 0)}
        else:
            mqs = await self.subscribe_info(topic)
        if mqs is None:
            if not is_retry_topic(topic):
                log.warning("QueryAssignment: no route for topic %s (group %s)", topic, group)
            return None
        if not self.balance:
            return sorted(mqs, key=sort_key)
        info = self.c.consumers.find(group)
        if info is None:
            log.warning("QueryAssignment: group %s has no consumer on this broker", group)
            return None
        strategy = STRATEGIES.get(body.strategy_name)
        if strategy is None:
            log.warning("QueryAssignment: unsupported strategy %r", body.strategy_name)
            return None
        return allocate(strategy, body.client_id, mqs, info.client_ids(),
                        pop=mode.mode == MODE_POP, share=mode.pop_share_queue_num)

    async def subscribe_info(self, topic: str) -> set[MessageQueue] | None:
        """The topic's readable queues in the whole cluster, from the name server; None when unknown."""
        now = self.c.clock()
        cached = self._routes.get(topic)
        if cached is not None and cached[1] and now - cached[0] < ROUTE_TTL_S:
            return cached[1]
        cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic).to_ext())
        try:
            resp = await self.c.client.invoke_namesrv(cmd, ROUTE_TIMEOUT_S)
        except RemotingError as exc:
            log.warning("QueryAssignment: route of %s not read: %s", topic, exc)
            return cached[1] if cached is not None else None
        if resp.code == ResponseCode.TOPIC_NOT_EXIST:
            self._routes.pop(topic, None)
            return None
        if resp.code != ResponseCode.SUCCESS or not resp.body:
            return cached[1] if cached is not None else None
        queues = subscribe_queues(topic, TopicRouteData.from_json(resp.body))
        self._routes[topic] = (now, queues)
        return queues or None

    # ------------------------------------------------------------------ the request modes

    def set_message_request_mode(
        self, conn: RemotingConnection, req: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        body = SetMessageRequestModeRequestBody.from_request(req.body or b"")
        if is_retry_topic(body.topic):
            return req.response(ResponseCode.NO_PERMISSION, "retry topic is not allowed to set mode")
        if self.c.topics.select(body.topic) is None:
            return req.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{body.topic}] not exist")
        if self.c.groups.find(body.consumer_group) is None:
            return req.response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group does not exist")
        self.modes.set(body)
        return when_written(req.response(ResponseCode.SUCCESS, None), self.modes)

    def get_all_message_request_mode(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """The whole table, as a slave's BrokerOuterAPI.getAllMessageRequestMode reads it from its master."""
        return req.response(ResponseCode.SUCCESS, None, body=self.modes.encode())


def register(server: RemotingServer, controller: BrokerContext) -> AssignmentProcessor:
    proc = AssignmentProcessor(controller)
    server.register(RequestCode.QUERY_ASSIGNMENT, proc.query_assignment)
    server.register(RequestCode.SET_MESSAGE_REQUEST_MODE, proc.set_message_request_mode)
    server.register(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE, proc.get_all_message_request_mode)
    return proc
