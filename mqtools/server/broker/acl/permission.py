"""ACL 1.0 permissions (RocketMQ's Permission and PlainAccessValidator.parse), sans-IO.

A request needs a permission on each resource it touches: topics by name, consumer groups as their
retry topic `%RETRY%group` (the ACL file's groupPerms are stored that way too). Which resources a
request code touches is the table in `needed()`. Admin-only codes are RocketMQ's five plus our
additions, which RocketMQ 4.x leaves to any signed account: offset reset and the ACL admin
requests of both models (changing or reading accounts, ACL 2.0 users and rules must not be open to a
publisher: while ACL 1.0 is in force and 2.0 not yet enforcing, the 1.0 check is all that stands before
AUTH_LIST_USER's passwords).
"""

from __future__ import annotations

from mqtools.common.topics import is_retry_topic, retry_topic
from mqtools.remoting.bodies import HeartbeatData
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.acl.codes import served_code

DENY = 1
ANY = 1 << 1
PUB = 1 << 2
SUB = 1 << 3
_BY_NAME = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}

ADMIN_CODES = frozenset({
    RequestCode.UPDATE_AND_CREATE_TOPIC,
    RequestCode.UPDATE_BROKER_CONFIG,
    RequestCode.DELETE_TOPIC_IN_BROKER,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    RequestCode.DELETE_SUBSCRIPTIONGROUP,
    # ours, beyond RocketMQ 4.x's list
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
    RequestCode.DELETE_ACL_CONFIG,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
    RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG,
    RequestCode.AUTH_CREATE_USER,
    RequestCode.AUTH_UPDATE_USER,
    RequestCode.AUTH_DELETE_USER,
    RequestCode.AUTH_GET_USER,
    RequestCode.AUTH_LIST_USER,
    RequestCode.AUTH_CREATE_ACL,
    RequestCode.AUTH_UPDATE_ACL,
    RequestCode.AUTH_DELETE_ACL,
    RequestCode.AUTH_GET_ACL,
    RequestCode.AUTH_LIST_ACL,
})


def parse_perm(text: str | None) -> int:
    """'PUB', 'SUB', 'PUB|SUB', 'DENY'; anything else denies, as RocketMQ reads it."""
    return _BY_NAME.get((text or "").strip(), DENY)


def is_valid_perm(text: str) -> bool:
    return text.strip() in _BY_NAME


def perm_name(perm: int) -> str:
    if perm & DENY:
        return "DENY"
    return "|".join(name for name, bit in (("PUB", PUB), ("SUB", SUB)) if perm & bit) or "DENY"


def check(needed: int, owned: int) -> bool:
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def parse_resource_perms(items: list[str] | None, *, groups: bool) -> dict[str, int]:
    """`["topicA=PUB", "topicB=DENY"]` -> {resource: perm}; groups keyed by their retry topic."""
    perms: dict[str, int] = {}
    for item in items or []:
        name, sep, perm = str(item).partition("=")
        if not sep or not name.strip() or "=" in perm:
            kind = "group" if groups else "topic"
            raise ValueError(f"bad {kind} permission {item!r}: expected NAME=PUB|SUB|PUB|SUB|DENY")
        if not is_valid_perm(perm):
            raise ValueError(f"bad permission in {item!r}: expected PUB, SUB, PUB|SUB or DENY")
        perms[retry_topic(name.strip()) if groups else name.strip()] = parse_perm(perm)
    return perms


def describe(resource: str) -> str:
    """How a refusal names a resource: 'group G' for a retry topic, else 'topic T'."""
    if is_retry_topic(resource):
        return f"group {resource[len(retry_topic('')):]}"
    return f"topic {resource}"


def needed(request: RemotingCommand) -> dict[str, int]:
    """The resources a request touches and the permission each needs (empty: none checked)."""
    ext = request.ext_fields
    code = served_code(request.code)
    need: dict[str, int] = {}

    def add(resource: str | None, perm: int) -> None:
        if resource:
            need[resource] = need.get(resource, 0) | perm

    if code == RequestCode.SEND_MESSAGE:
        topic = ext.get("topic")
        if topic is not None and is_retry_topic(topic):
            add(retry_topic(ext.get("producerGroup", "")), SUB)
        else:
            add(topic, PUB)
    elif code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        topic = ext.get("b")
        if topic is not None and is_retry_topic(topic):
            add(retry_topic(ext.get("a", "")), SUB)
        else:
            add(topic, PUB)
    elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
        add(retry_topic(ext.get("group", "")), SUB)
    elif code == RequestCode.PULL_MESSAGE:
        add(ext.get("topic"), SUB)
        add(retry_topic(ext.get("consumerGroup", "")), SUB)
    elif code == RequestCode.QUERY_MESSAGE:
        add(ext.get("topic"), SUB)
    elif code == RequestCode.HEART_BEAT and request.body:
        for consumer in HeartbeatData.from_request(request.body).consumer_data_set:
            add(retry_topic(consumer.group_name), SUB)
            for sub in consumer.subscription_data_set:
                add(sub.topic, SUB)
    elif code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        add(retry_topic(ext.get("consumerGroup", "")), SUB)
    elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
        add(retry_topic(ext.get("consumerGroup", "")), SUB)
        add(ext.get("topic"), SUB)
    return need
