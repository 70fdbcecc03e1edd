"""The 16-bit forms of the POP codes a broker serves (3442 for 200050, ...) are judged by both ACLs exactly as
their full codes: a user refused POP_MESSAGE is refused 3442 too."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtools.common.auth.model import User, UserStatus, UserType
from mqtools.common.security import SessionCredentials
from mqtools.remoting import acl
from mqtools.remoting.auth_bodies import AclInfo, PolicyEntryInfo, PolicyInfo, acl_of
from mqtools.remoting.codes import RequestCode, java_short
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.acl.manager import PlainPermissionManager
from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.auth.config import AuthConfig
from mqtools.server.broker.auth.service import AuthService
from mqtools.server.broker.auth.store import AuthMetadataStore
from mqtools.server.broker.config import load_config

PKG = "org.apache.rocketmq.auth"
PEER = "10.0.0.7:4000"
POP_CODES = (RequestCode.POP_MESSAGE, RequestCode.ACK_MESSAGE, RequestCode.PEEK_MESSAGE,
             RequestCode.CHANGE_MESSAGE_INVISIBLETIME, RequestCode.NOTIFICATION, RequestCode.POLLING_INFO,
             RequestCode.BATCH_ACK_MESSAGE)
PASSWORD = "app-password"
SECRET = "app-secret-key"
PLAIN_ACL = f"""accounts:
- accessKey: app-user
  secretKey: {SECRET}
  admin: false
  defaultTopicPerm: DENY
  defaultGroupPerm: DENY
"""


def signed(code: int, user: str, secret: str) -> RemotingCommand:
    cmd = RemotingCommand.request(code, {"consumerGroup": "g", "topic": "t", "invisibleTime": "30000"}, b"{}")
    acl.sign(cmd, SessionCredentials(user, secret))
    return cmd


def auth_service(tmp_path: Path, *entries: tuple[str, list[str], str]) -> AuthService:
    config = AuthConfig.from_properties({
        "authenticationEnabled": "true", "authorizationEnabled": "true",
        "authenticationMetadataProvider": f"{PKG}.authentication.provider.LocalAuthenticationMetadataProvider",
        "authorizationMetadataProvider": f"{PKG}.authorization.provider.LocalAuthorizationMetadataProvider"})
    store = AuthMetadataStore(tmp_path)
    store.users["app"] = User("app", PASSWORD, UserType.NORMAL, UserStatus.ENABLE)
    if entries:
        info = AclInfo("User:app", [PolicyInfo("Custom", [PolicyEntryInfo(r, a, None, d) for r, a, d in entries])])
        store.acls["User:app"] = acl_of(info, None)
    return AuthService(config, store, "DefaultCluster")


@pytest.mark.parametrize("rules", [
    (),  # a Normal user without rules
    (("Group:g", ["Sub", "Get"], "Allow"), ("Topic:t", ["Sub", "Get"], "Allow")),
    (("Group:*", ["All"], "Allow"), ("Topic:*", ["All"], "Allow"), ("Topic:t", ["Sub"], "Deny")),
])
def test_acl_2_refuses_the_short_form_as_it_refuses_the_full_code(tmp_path: Path, rules: tuple) -> None:
    service = auth_service(tmp_path, *rules)
    for code in POP_CODES:
        full = service.refusal(signed(code, "app", PASSWORD), PEER)
        assert service.refusal(signed(java_short(code), "app", PASSWORD), PEER) == full, code.name
    if not rules:
        assert "no matched policies" in (service.refusal(signed(java_short(RequestCode.POP_MESSAGE), "app",
                                                                PASSWORD), PEER) or "")


def test_acl_1_refuses_the_short_form_as_it_refuses_the_full_code(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(PLAIN_ACL)
    manager = PlainPermissionManager(path, clock=lambda: 1_700_000_000.0)
    manager.load()
    for code in POP_CODES:
        full = manager.refusal(signed(code, "app-user", SECRET), PEER)
        assert manager.refusal(signed(java_short(code), "app-user", SECRET), PEER) == full, code.name
        assert "signature" in (manager.refusal(signed(java_short(code), "app-user", "wrong-secret"), PEER) or "")


def test_every_code_a_broker_serves_is_judged_as_a_known_full_code(tmp_path: Path) -> None:
    """What the broker registers, not a list written here: each code is a RequestCode or the 16-bit form of one,
    and each 16-bit form is served by its full code's processor and refused as that code is."""
    broker = BrokerController(load_config(None, {"storePathRootDir": str(tmp_path / "store")}, env={}))
    served = broker.server.processors
    known = {int(code) for code in RequestCode}
    short = {java_short(code): int(code) for code in RequestCode
             if java_short(code) in served and java_short(code) not in known}
    assert set(served) <= known | set(short), sorted(set(served) - known - set(short))
    assert set(short.values()) == set(POP_CODES)  # the broker serves each POP code in both forms
    service = auth_service(tmp_path)
    for code, full in short.items():
        assert served[code] == served[full]
        assert service.refusal(signed(code, "app", PASSWORD), PEER) == service.refusal(
            signed(full, "app", PASSWORD), PEER)
