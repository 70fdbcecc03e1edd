"""A group's members as one read gives them: the brokers' and, for RocketMQ 5 gRPC clients, the proxies' (which
alone know them); a proxy that did not answer leaves the members unknown, never 'nobody online'."""

from __future__ import annotations

from mqtools.client.admin.models.groups import ClientConnection, ConsumerProgress, GroupConnections
from mqtools.client.errors import ConsumerNotOnlineError
from mqtools.diagnose.collect import GroupReading
from mqtools.diagnose.group import Member

NOBODY = ConsumerNotOnlineError(206, "the consumer group[G] not online")
AT_BROKERS = GroupConnections("G", [ClientConnection("java-1", "10.0.0.1:1", "JAVA", 407)], {}, None, None, None)
GRPC = [Member("grpc-1", "V5_1_2")]


def members(conns: object, grpc: list[Member] | None) -> list[str] | None:
    infos = [NOBODY] if isinstance(conns, GroupConnections) else []  # running info not read: the member stays
    sample = GroupReading(0.0, ConsumerProgress("G"), conns, infos, grpc=grpc).sample()  # type: ignore[arg-type]
    return None if sample.members is None else [m.client_id for m in sample.members]


def test_grpc_clients_are_members_the_brokers_do_not_see() -> None:
    assert members(NOBODY, GRPC) == ["grpc-1"]
    assert members(AT_BROKERS, GRPC) == ["java-1", "grpc-1"]
    assert members(NOBODY, []) == []  # no proxy given, or none has it: offline


def test_a_proxy_that_did_not_answer_leaves_an_empty_group_unknown() -> None:
    assert members(NOBODY, None) is None
    assert members(AT_BROKERS, None) == ["java-1"]  # members known to be there: not offline either way
