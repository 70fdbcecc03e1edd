"""A send to a retry topic needs Sub on a group, read as Apache's DefaultAuthorizationContextBuilder reads it:
SEND_MESSAGE names the group in the field "group" (its header has none: producerGroup is not read), else the
retry topic's own group; SEND_MESSAGE_V2 the producer group "a", else the topic's group."""

from __future__ import annotations

from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.auth.contexts import ContextBuilder


def asks(code: int, **ext: str) -> list[tuple[str, tuple[str, ...]]]:
    req = RemotingCommand.request(code, {"AccessKey": "app", **ext})
    return [(c.resource.key, tuple(a.label for a in c.actions)) for c in ContextBuilder("c").build(req, "10.0.0.7")]


def test_a_v1_send_to_a_retry_topic_needs_sub_on_the_topics_group_not_the_producer_group() -> None:
    assert asks(RequestCode.SEND_MESSAGE, topic="%RETRY%victim", producerGroup="mine") == [("Group:victim", ("Sub",))]
    assert asks(RequestCode.SEND_MESSAGE, topic="%RETRY%victim", producerGroup="mine", group=" ") == [
        ("Group:victim", ("Sub",))]
    assert asks(RequestCode.SEND_MESSAGE, topic="%RETRY%victim", group="named") == [("Group:named", ("Sub",))]
    assert asks(RequestCode.SEND_MESSAGE, topic="orders", producerGroup="mine") == [("Topic:orders", ("Pub",))]


def test_a_v2_send_to_a_retry_topic_reads_the_producer_group_as_apache_does() -> None:
    assert asks(RequestCode.SEND_MESSAGE_V2, a="mine", b="%RETRY%victim") == [("Group:mine", ("Sub",))]
    assert asks(RequestCode.SEND_MESSAGE_V2, a=" ", b="%RETRY%victim") == [("Group:victim", ("Sub",))]
