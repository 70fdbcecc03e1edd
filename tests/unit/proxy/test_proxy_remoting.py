"""The proxy's remoting answers about its gRPC clients, built from the clients' settings (no sockets)."""

from __future__ import annotations

from mqtools.common.mqversion import version_desc
from mqtools.proxy.clients import Clients
from mqtools.proxy.protos.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.proxy.remoting import ProxyRemoting, connection, consumer_connection
from mqtools.remoting.bodies import ConsumerConnection, ProducerConnection
from mqtools.remoting.codes import PROTOCOL_VERSION, RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand


def settings_consumer(group: str, kind: int, **subs: tuple[int, str]) -> pb.Settings:
    entries = [pb.SubscriptionEntry(topic=pb.Resource(name=t), expression=pb.FilterExpression(type=ft, expression=e))
               for t, (ft, e) in subs.items()]
    return pb.Settings(client_type=kind, subscription=pb.Subscription(group=pb.Resource(name=group),
                                                                      subscriptions=entries))


def clients() -> Clients:
    out = Clients(clock_ms=lambda: 1000)
    push = out.touch("push-1", language="JAVA", version="5.0.8", peer="10.0.0.1:5000")
    push.settings = settings_consumer("G", pb.PUSH_CONSUMER, Orders=(pb.TAG, "TagA || TagB"), Audit=(pb.SQL, "a > 1"))
    simple = out.touch("simple-1", language="GOLANG", version="weird", peer="10.0.0.2:5000")
    simple.settings = settings_consumer("H", pb.SIMPLE_CONSUMER, Orders=(pb.TAG, "*"))
    producer = out.touch("prod-1", language="PYTHON", version="5.1.2", peer="10.0.0.3:5000")
    producer.settings = pb.Settings(client_type=pb.PRODUCER,
                                    publishing=pb.Publishing(topics=[pb.Resource(name="Orders")]))
    return out


def test_a_group_reads_as_apaches_proxy_reports_it() -> None:
    body = consumer_connection(clients().consumers_of("G"))
    assert (body.consume_type, body.message_model, body.consume_from_where) == (
        "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")
    (conn,) = body.connection_set
    assert (conn.client_id, conn.client_addr, conn.language) == ("push-1", "10.0.0.1:5000", "JAVA")
    assert body.subscription_table["Orders"].tags_set == {"TagA", "TagB"}
    assert (body.subscription_table["Audit"].expression_type, body.subscription_table["Audit"].sub_string) == (
        "SQL92", "a > 1")
    again = ConsumerConnection.from_json(body.to_json())
    assert again.connection_set[0].client_id == "push-1"


def test_languages_and_versions_rocketmq_has_no_name_for() -> None:
    c = clients()
    odd = connection(c.get("simple-1"))  # type: ignore[arg-type]
    assert (odd.language, odd.version) == ("OTHER", PROTOCOL_VERSION)
    assert version_desc(connection(c.get("push-1")).version) == "V5_0_8"  # type: ignore[arg-type]


def test_the_port_answers_consumers_producers_and_not_online() -> None:
    port = ProxyRemoting(clients(), "127.0.0.1", 0)

    def ask(code: int, **ext: str) -> RemotingCommand:
        return port.server.processors[code](None, RemotingCommand.request(code, ext))  # type: ignore[arg-type,return-value]

    simple = ask(RequestCode.GET_CONSUMER_CONNECTION_LIST, consumerGroup="H")
    assert ConsumerConnection.from_json(simple.body).consume_type == "CONSUME_ACTIVELY"  # type: ignore[arg-type]
    gone = ask(RequestCode.GET_CONSUMER_CONNECTION_LIST, consumerGroup="Nobody")
    assert (gone.code, gone.remark) == (ResponseCode.CONSUMER_NOT_ONLINE, "the consumer group[Nobody] not online")
    produced = ask(RequestCode.GET_PRODUCER_CONNECTION_LIST, producerGroup="Orders")
    assert [c.client_id for c in ProducerConnection.from_json(produced.body).connection_set] == ["prod-1"]  # type: ignore[arg-type]
    assert ask(RequestCode.GET_PRODUCER_CONNECTION_LIST, producerGroup="Other").code == ResponseCode.SYSTEM_ERROR
