"""The configurations the admin API takes and gives back whole: RocketMQ's own classes, and the name
servers' key-value settings.

A topic's TopicConfig, a group's SubscriptionGroupConfig, an ACL account's PlainAccessConfig, a
MessageQueue, the ClusterInfo and TopicRouteData a name server answers: RocketMQ's admin API
(DefaultMQAdminExt) hands these to its callers as they are, and so does MQAdmin. The tools name them
from here, the admin API's vocabulary, rather than from the wire layer that encodes them.

The name servers' KV config and their own configuration are plain key -> value maps; their documents
are rendered here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mqtools.client.errors import MQClientError, UnreachableError
from mqtools.common.presentation import Column, Unreachable, View, renders
from mqtools.remoting.bodies import (
    ClusterInfo,
    MessageQueue,
    PlainAccessConfig,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicRouteData,
    comma_list,
)

__all__ = [
    "ClusterInfo",
    "MessageQueue",
    "NamesrvConfigs",
    "PlainAccessConfig",
    "SubscriptionGroupConfig",
    "TopicConfig",
    "TopicRouteData",
    "WritePermChange",
    "comma_list",
    "kv_list_view",
    "kv_view",
    "namesrv_config_view",
]


@renders("KV")
def kv_view(namespace: str, key: str, value: str) -> View:
    return View("KV", [Column("NAMESPACE"), Column("KEY"), Column("VALUE")], [[namespace, key, value]],
                {"namespace": namespace, "key": key, "value": value})


@renders("KVList")
def kv_list_view(namespace: str, entries: dict[str, str]) -> View:
    """Every key of a namespace, sorted."""
    ordered = dict(sorted(entries.items()))
    return View("KVList", [Column("KEY"), Column("VALUE")], [[k, v] for k, v in ordered.items()],
                {"namespace": namespace, "entries": ordered})


@dataclass(frozen=True, slots=True)
class NamesrvConfigs:
    """Each answering name server's configuration, and the name servers that did not answer."""

    configs: dict[str, dict[str, str]]
    unreachable: list[Unreachable] = field(default_factory=list)


def not_everywhere(applied: Iterable[str], failed: dict[str, MQClientError]) -> MQClientError:
    """A change some name servers did not apply, as one error that says where it did; an UnreachableError (exit 3)
    when only unreachable name servers kept it from the rest, else a refusal (exit 1)."""
    done = list(applied)
    where = f"applied on {', '.join(done)}" if done else "applied on no name server"
    message = "; ".join(f"{addr}: {exc}" for addr, exc in failed.items()) + f" ({where})"
    unreachable = all(isinstance(exc, UnreachableError) for exc in failed.values())
    return UnreachableError(message) if unreachable else MQClientError(message)


@dataclass
class WritePermChange:
    """A broker's write permission wiped or given back on every name server: the topics changed on each that
    applied it, and why each of the others did not."""

    broker_name: str
    topics: dict[str, int]
    failed: dict[str, MQClientError] = field(default_factory=dict)

    def error(self) -> MQClientError | None:
        """What kept the change from some name servers, None when every one applied it."""
        return not_everywhere(self.topics, self.failed) if self.failed else None

    def applied_lines(self, verb: str) -> list[str]:
        """A line per name server that applied it ("wiped", "restored"), with the topics it changed."""
        return [f"{ns}: {verb} write permission of {self.broker_name} on {n} topics" for ns, n in self.topics.items()]


@renders("NamesrvConfig")
def namesrv_config_view(read: NamesrvConfigs) -> View:
    """Each name server's configuration (name server address -> key -> value), keys sorted; partial when a
    name server did not answer."""
    rows = [[ns, k, v] for ns, config in read.configs.items() for k, v in sorted(config.items())]
    return View("NamesrvConfig", [Column("NAMESRV"), Column("KEY"), Column("VALUE")], rows,
                {"namesrv": {ns: dict(sorted(c.items())) for ns, c in read.configs.items()}},
                unreachable=read.unreachable)
