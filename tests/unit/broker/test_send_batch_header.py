"""SEND_BATCH_MESSAGE is read by the V2 header's short names only, as Apache's parseRequestHeader reads it: a
batch naming its topic by the long names (which neither ACL reads for this code) is refused, never stored."""

from __future__ import annotations

import struct
from pathlib import Path
from types import SimpleNamespace

from mqtools.common.auth.model import User, UserStatus, UserType
from mqtools.remoting.auth_bodies import AclInfo, PolicyEntryInfo, PolicyInfo, acl_of
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import SendMessageRequestHeader, send_v2_fields
from mqtools.remoting.server import RemotingServer
from mqtools.server.broker.auth.config import AuthConfig
from mqtools.server.broker.auth.service import AuthService
from mqtools.server.broker.auth.store import AuthMetadataStore
from mqtools.server.broker.processors import send
from mqtools.server.broker.stats import BrokerStats
from mqtools.server.store.results import AppendMessageResult, PutMessageResult, PutMessageStatus

PKG = "org.apache.rocketmq.auth"
#: one message "hi" without properties, in MessageDecoder.encodeMessages' layout
BATCH_BODY = struct.pack(">iiiii", 24, 0, 0, 0, 2) + b"hi" + struct.pack(">h", 0)


class Conn:
    peer = "10.0.0.7:4000"
    last_of_read = True

    def __init__(self) -> None:
        self.answers: list[RemotingCommand] = []

    def send(self, resp: RemotingCommand) -> None:
        self.answers.append(resp)


def broker(tmp_path: Path) -> tuple[RemotingServer, list[str]]:
    """A send processor over a store that records each batch's topic, behind ACL 2.0 rules that let `app`
    publish anywhere but `secret`."""
    stored: list[str] = []

    def put(batch: object, defer_dispatch: object = None) -> PutMessageResult:
        stored.append(batch.topic)  # type: ignore[attr-defined]
        return PutMessageResult(PutMessageStatus.PUT_OK, AppendMessageResult(0, 22, "ID", 1, 0))

    context = SimpleNamespace(
        fast_failure=SimpleNamespace(refusal=lambda: None),
        config=SimpleNamespace(is_slave=False, broker_permission=6, broker_ip1="10.0.0.1", max_message_size=1 << 22,
                               broker_cluster_name="DefaultCluster"),
        topics=SimpleNamespace(select=TopicConfig, unwritten=None),
        store=SimpleNamespace(put_messages_inline=put), broker_addr="10.0.0.1:10911", stats=BrokerStats(lambda: 1.0))
    server = RemotingServer()
    send.register(server, context)  # type: ignore[arg-type]
    store = AuthMetadataStore(tmp_path)
    store.users["app"] = User("app", "pw", UserType.NORMAL, UserStatus.ENABLE)
    store.acls["User:app"] = acl_of(AclInfo("User:app", [PolicyInfo("Custom", [
        PolicyEntryInfo("Topic:*", ["Pub"], None, "Allow"), PolicyEntryInfo("Topic:secret", ["Pub"], None, "Deny")])]),
        None)
    config = AuthConfig.from_properties({
        "authorizationEnabled": "true",
        "authorizationMetadataProvider": f"{PKG}.authorization.provider.LocalAuthorizationMetadataProvider"})
    AuthService(config, store, "DefaultCluster").install(server)
    return server, stored


def answer(server: RemotingServer, ext: dict[str, str]) -> RemotingCommand:
    conn = Conn()
    server._on_request(conn, RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, {"AccessKey": "app", **ext},
                                                     BATCH_BODY))  # type: ignore[arg-type]
    (resp,) = conn.answers
    return resp


def test_a_batch_with_long_header_names_is_refused_and_never_stored(tmp_path: Path) -> None:
    server, stored = broker(tmp_path)
    short = send_v2_fields("pg", "secret", "TBW102", "4", 0, 0, 1, 0, "", batch=True)
    assert answer(server, short).code == ResponseCode.NO_PERMISSION  # the ACL reads the short names
    long_names = SendMessageRequestHeader.from_v2(short).to_ext()
    assert "topic" in long_names and "b" not in long_names
    refused = answer(server, long_names)
    assert (refused.code, refused.remark) == (ResponseCode.SYSTEM_ERROR, "the custom field <producerGroup> is null")
    assert stored == []
    assert answer(server, send_v2_fields("pg", "open", "TBW102", "4", 0, 0, 1, 0, "", batch=True)).code \
        == ResponseCode.SUCCESS
    assert stored == ["open"]
