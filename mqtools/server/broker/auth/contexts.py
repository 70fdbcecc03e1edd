"""What a remoting request asks for, as ACL 2.0 authorization contexts (DefaultAuthorizationContextBuilder).

The requests clients send most are read by hand as Apache reads them (send, pull, heartbeat, offsets,
locks): a retry topic stands for its group and needs Sub on the group. Every other request is read
from the `@RocketMQAction`/`@RocketMQResource` annotations of its Apache request header, copied
here as a table (`RULES`): the actions it needs and the header fields that name its topics and groups;
a Cluster request names this broker's cluster. A request neither reads nor annotates needs no
permission beyond authentication, as in Apache. A code the broker also serves in its 16-bit form (POP)
is read as its full code (`served_code`), so both forms need the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.common.auth.model import RETRY_PREFIX, Action, Resource, ResourcePattern, ResourceType
from mqtools.common.auth.policy import AccessRequest, AuthError
from mqtools.common.auth.signature import ACCESS_KEY
from mqtools.remoting.bodies import HeartbeatData, LockBatchRequestBody
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.acl.codes import served_code


@dataclass(frozen=True, slots=True)
class _Rule:
    """A header's @RocketMQAction (resource type, actions) and its @RocketMQResource fields."""

    resource: ResourceType | None
    actions: tuple[Action, ...]
    fields: tuple[tuple[str, ResourceType, str | None], ...]


RULES: dict[int, _Rule] = {
    RequestCode.ACK_MESSAGE: _Rule(None, (Action.SUB,), (("consumerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.ADD_WRITE_PERM_OF_BROKER: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.AUTH_CREATE_ACL: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.AUTH_CREATE_USER: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.AUTH_DELETE_ACL: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.AUTH_DELETE_USER: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.AUTH_GET_ACL: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.AUTH_GET_USER: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.AUTH_LIST_ACL: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.AUTH_LIST_USER: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.AUTH_UPDATE_ACL: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.AUTH_UPDATE_USER: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.BROKER_HEARTBEAT: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), (("clusterName", ResourceType.CLUSTER, None),)),
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME: _Rule(None, (Action.SUB,), (("consumerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.CHECK_TRANSACTION_STATE: _Rule(None, (Action.PUB,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.CLEAN_BROKER_DATA: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), (("clusterName", ResourceType.CLUSTER, None),)),
    RequestCode.CLONE_GROUP_OFFSET: _Rule(None, (Action.UPDATE,), (("destGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.CONSUMER_SEND_MSG_BACK: _Rule(None, (Action.SUB,), (("group", ResourceType.GROUP, None), ("originTopic", ResourceType.TOPIC, None))),
    RequestCode.CONSUME_MESSAGE_DIRECTLY: _Rule(None, (Action.SUB,), (("consumerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.CONTROLLER_APPLY_BROKER_ID: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), (("clusterName", ResourceType.CLUSTER, None),)),
    RequestCode.CONTROLLER_ELECT_MASTER: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.CONTROLLER_GET_NEXT_BROKER_ID: _Rule(ResourceType.CLUSTER, (Action.GET,), (("clusterName", ResourceType.CLUSTER, None),)),
    RequestCode.CONTROLLER_GET_REPLICA_INFO: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.CONTROLLER_REGISTER_BROKER: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), (("clusterName", ResourceType.CLUSTER, None),)),
    RequestCode.DELETE_KV_CONFIG: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.DELETE_SUBSCRIPTIONGROUP: _Rule(None, (Action.DELETE,), (("groupName", ResourceType.GROUP, None),)),
    RequestCode.DELETE_TOPIC_IN_BROKER: _Rule(None, (Action.DELETE,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.DELETE_TOPIC_IN_NAMESRV: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), (("clusterName", ResourceType.CLUSTER, None),)),
    RequestCode.END_TRANSACTION: _Rule(None, (Action.PUB,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.EXCHANGE_BROKER_HA_INFO: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.GET_ALL_PRODUCER_INFO: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: _Rule(ResourceType.GROUP, (Action.GET,), ()),
    RequestCode.GET_ALL_TOPIC_CONFIG: _Rule(ResourceType.TOPIC, (Action.GET,), ()),
    RequestCode.GET_BROKER_CONSUME_STATS: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.GET_BROKER_MEMBER_GROUP: _Rule(None, (Action.GET,), (("clusterName", ResourceType.CLUSTER, None),)),
    RequestCode.GET_CONSUMER_CONNECTION_LIST: _Rule(None, (Action.GET,), (("consumerGroup", ResourceType.GROUP, None),)),
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: _Rule(None, (Action.SUB,), (("consumerGroup", ResourceType.GROUP, None),)),
    RequestCode.GET_CONSUMER_RUNNING_INFO: _Rule(None, (Action.GET,), (("consumerGroup", ResourceType.GROUP, None),)),
    # mq's private GET_POP_IN_FLIGHT reads what GET_CONSUME_STATS reads, and needs what it needs
    RequestCode.GET_POP_IN_FLIGHT: _Rule(None, (Action.GET,), (("consumerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.GET_CONSUME_STATS: _Rule(None, (Action.GET,), (("consumerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None), ("topicList", ResourceType.TOPIC, ';'))),
    RequestCode.GET_EARLIEST_MSG_STORETIME: _Rule(None, (Action.GET,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.GET_KVLIST_BY_NAMESPACE: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.GET_KV_CONFIG: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.GET_MAX_OFFSET: _Rule(None, (Action.GET,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.GET_MIN_OFFSET: _Rule(None, (Action.GET,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.GET_PRODUCER_CONNECTION_LIST: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.GET_ROUTEINFO_BY_TOPIC: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: _Rule(None, (Action.GET,), (("group", ResourceType.GROUP, None),)),
    RequestCode.GET_TOPICS_BY_CLUSTER: _Rule(ResourceType.TOPIC, (Action.LIST,), ()),
    RequestCode.GET_TOPIC_CONFIG: _Rule(None, (Action.GET,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.GET_TOPIC_STATS_INFO: _Rule(None, (Action.GET,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.HEART_BEAT: _Rule(ResourceType.GROUP, (Action.PUB, Action.SUB,), ()),
    RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: _Rule(None, (Action.GET,), (("topic", ResourceType.TOPIC, None), ("group", ResourceType.GROUP, None))),
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: _Rule(None, (Action.UPDATE,), (("group", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.LOCK_BATCH_MQ: _Rule(None, (Action.SUB,), ()),
    RequestCode.NOTIFICATION: _Rule(None, (Action.SUB,), (("consumerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.NOTIFY_BROKER_ROLE_CHANGED: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: _Rule(None, (Action.SUB,), (("consumerGroup", ResourceType.GROUP, None),)),
    RequestCode.PEEK_MESSAGE: _Rule(None, (Action.SUB,), (("topic", ResourceType.TOPIC, None), ("consumerGroup", ResourceType.GROUP, None))),
    RequestCode.POLLING_INFO: _Rule(None, (Action.GET,), (("consumerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.POP_MESSAGE: _Rule(None, (Action.SUB,), (("consumerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.PULL_MESSAGE: _Rule(None, (Action.SUB,), (("consumerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT: _Rule(None, (Action.SUB,), (("producerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.PUT_KV_CONFIG: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.QUERY_CONSUMER_OFFSET: _Rule(None, (Action.GET,), (("consumerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.QUERY_CONSUME_QUEUE: _Rule(None, (Action.GET,), (("topic", ResourceType.TOPIC, None), ("consumerGroup", ResourceType.GROUP, None))),
    RequestCode.QUERY_CONSUME_TIME_SPAN: _Rule(None, (Action.GET,), (("topic", ResourceType.TOPIC, None), ("group", ResourceType.GROUP, None))),
    RequestCode.QUERY_CORRECTION_OFFSET: _Rule(None, (Action.GET,), (("filterGroups", ResourceType.GROUP, ','), ("compareGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.QUERY_DATA_VERSION: _Rule(ResourceType.CLUSTER, (Action.GET,), (("clusterName", ResourceType.CLUSTER, None),)),
    RequestCode.QUERY_MESSAGE: _Rule(None, (Action.SUB, Action.GET,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: _Rule(None, (Action.GET,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.REGISTER_BROKER: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), (("clusterName", ResourceType.CLUSTER, None),)),
    RequestCode.REGISTER_TOPIC_IN_NAMESRV: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: _Rule(None, (Action.GET,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.SEND_MESSAGE: _Rule(None, (Action.PUB,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.SEND_MESSAGE_V2: _Rule(None, (Action.PUB,), (("b", ResourceType.TOPIC, None),)),
    RequestCode.UNLOCK_BATCH_MQ: _Rule(None, (Action.SUB,), ()),
    RequestCode.UNREGISTER_BROKER: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), (("clusterName", ResourceType.CLUSTER, None),)),
    RequestCode.UNREGISTER_CLIENT: _Rule(None, (Action.PUB, Action.SUB,), (("consumerGroup", ResourceType.GROUP, None),)),
    RequestCode.UPDATE_AND_CREATE_TOPIC: _Rule(None, (Action.CREATE,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.UPDATE_CONSUMER_OFFSET: _Rule(None, (Action.SUB,), (("consumerGroup", ResourceType.GROUP, None), ("topic", ResourceType.TOPIC, None))),
    RequestCode.VIEW_BROKER_STATS_DATA: _Rule(ResourceType.CLUSTER, (Action.GET,), ()),
    RequestCode.VIEW_MESSAGE_BY_ID: _Rule(None, (Action.GET,), (("topic", ResourceType.TOPIC, None),)),
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: _Rule(ResourceType.CLUSTER, (Action.UPDATE,), ()),
}


def _retry(name: str | None) -> bool:
    return bool(name) and name.startswith(RETRY_PREFIX)  # type: ignore[union-attr]


class ContextBuilder:
    """Turns a request into the AccessRequests it must pass; `cluster` names Cluster resources."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    def build(self, req: RemotingCommand, source_ip: str) -> list[AccessRequest]:
        try:
            return self._build(req, source_ip)
        except AuthError:
            raise
        except Exception as exc:
            raise AuthError("parse authorization context error.") from exc

    def _build(self, req: RemotingCommand, ip: str) -> list[AccessRequest]:
        ext = req.ext_fields
        if not ext:
            return []
        user = ext.get(ACCESS_KEY)

        def ctx(resource: Resource, *actions: Action) -> AccessRequest:
            return AccessRequest(user, resource, actions, ip)

        code = served_code(req.code)
        if code == RequestCode.SEND_MESSAGE:
            # Apache reads the field "group", not producerGroup: unless a client adds one, the retry topic's group
            return self._send(ctx, ext.get("topic"), ext.get("group"))
        if code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            return self._send(ctx, ext.get("b"), ext.get("a"))
        if code == RequestCode.END_TRANSACTION:
            return [ctx(Resource.topic(ext["topic"]), Action.PUB)] if ext.get("topic") else []
        if code == RequestCode.CONSUMER_SEND_MSG_BACK:
            return [ctx(Resource.group(ext.get("group", "")), Action.SUB)]
        if code == RequestCode.PULL_MESSAGE:
            out = [] if _retry(ext.get("topic")) else [ctx(Resource.topic(ext.get("topic", "")), Action.SUB)]
            return [*out, ctx(Resource.group(ext.get("consumerGroup", "")), Action.SUB)]
        if code == RequestCode.QUERY_MESSAGE:
            return [ctx(Resource.topic(ext.get("topic", "")), Action.SUB, Action.GET)]
        if code == RequestCode.HEART_BEAT:
            out = []
            for consumer in HeartbeatData.from_request(req.body or b"{}").consumer_data_set:
                out.append(ctx(Resource.group(consumer.group_name), Action.SUB))
                out += [ctx(Resource.topic(s.topic), Action.SUB) for s in consumer.subscription_data_set
                        if not _retry(s.topic)]
            return out
        if code == RequestCode.UNREGISTER_CLIENT:
            group = ext.get("consumerGroup")
            return [ctx(Resource.group(group), Action.SUB)] if group else []
        if code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            return [ctx(Resource.group(ext.get("consumerGroup", "")), Action.SUB, Action.GET)]
        if code in (RequestCode.QUERY_CONSUMER_OFFSET, RequestCode.UPDATE_CONSUMER_OFFSET):
            action = Action.GET if code == RequestCode.QUERY_CONSUMER_OFFSET else Action.UPDATE
            out = [] if _retry(ext.get("topic")) else [ctx(Resource.topic(ext.get("topic", "")), Action.SUB, action)]
            return [*out, ctx(Resource.group(ext.get("consumerGroup", "")), Action.SUB, action)]
        if code in (RequestCode.LOCK_BATCH_MQ, RequestCode.UNLOCK_BATCH_MQ):
            body = LockBatchRequestBody.from_request(req.body or b"{}")
            out = [ctx(Resource.group(body.consumer_group), Action.SUB)]
            return out + [ctx(Resource.topic(mq.topic), Action.SUB) for mq in body.mq_set if not _retry(mq.topic)]
        return self._annotated(req, code, user, ip)

    @staticmethod
    def _send(ctx, topic: str | None, group: str | None) -> list[AccessRequest]:  # type: ignore[no-untyped-def]
        """A retry topic needs Sub on the named group, or on the topic's own group when none is named
        (Apache's isNotBlank)."""
        if _retry(topic):
            return [ctx(Resource.group(group if group and group.strip() else topic or ""), Action.SUB)]
        return [ctx(Resource.topic(topic or ""), Action.PUB)]

    def _annotated(self, req: RemotingCommand, code: int, user: str | None, ip: str) -> list[AccessRequest]:
        rule = RULES.get(code)
        if rule is None:
            return []
        out: list[AccessRequest] = []
        for name, rtype, splitter in rule.fields:
            value = req.ext_fields.get(name)
            if value is None:
                continue
            for item in (value.split(splitter) if splitter else [value]):
                if not item:
                    continue
                if rtype is ResourceType.TOPIC and _retry(item):
                    resource = Resource.group(item)
                else:
                    resource = Resource(rtype, item, ResourcePattern.LITERAL)
                out.append(AccessRequest(user, resource, rule.actions, ip))
        if not out and rule.resource is ResourceType.CLUSTER:
            out.append(AccessRequest(user, Resource.cluster(self.cluster), rule.actions, ip))
        return out
