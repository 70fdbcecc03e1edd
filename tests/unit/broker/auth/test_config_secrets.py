"""ACL 2.0's broker properties hold Super users' passwords: GET_BROKER_CONFIG never answers them (Apache's
answer leaves AuthConfig out), and an initial user with a blank password stops start-up instead of becoming
a Super user anyone can sign as (Apache's createUser refuses it and the broker does not start)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mqtools.common.auth.model import User, UserStatus, UserType
from mqtools.common.javaprops import parse_properties
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.auth.config import CONFIG_KEYS, AuthConfig
from mqtools.server.broker.auth.service import AuthService
from mqtools.server.broker.auth.store import AuthMetadataStore
from mqtools.server.broker.config import load_config
from mqtools.server.lifecycle import StartError

PKG = "org.apache.rocketmq.auth"
METADATA = {"authenticationMetadataProvider": f"{PKG}.authentication.provider.LocalAuthenticationMetadataProvider",
            "authorizationMetadataProvider": f"{PKG}.authorization.provider.LocalAuthorizationMetadataProvider"}
SECRETS = ("init-super-secret", "inner-client-secret", "tls-key-secret")


def broker(tmp_path: Path, **props: str) -> BrokerController:
    return BrokerController(load_config(None, {"storePathRootDir": str(tmp_path / "store"), **props}, env={}))


def test_get_broker_config_answers_no_auth_key_and_no_secret(tmp_path: Path) -> None:
    controller = broker(
        tmp_path, brokerName="b1", authenticationEnabled="true", userCacheMaxNum="10", **METADATA,
        initAuthenticationUser='{"username":"rocketmq","password":"init-super-secret"}',
        innerClientAuthenticationCredentials='{"accessKey":"inner","secretKey":"inner-client-secret"}',
        **{"tls.server.keyPassword": "tls-key-secret"})
    handler = controller.server.processors[RequestCode.GET_BROKER_CONFIG]
    resp = handler(None, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG, {}))
    text = bytes(resp.body).decode()
    answered = parse_properties(text)
    assert answered["brokerName"] == "b1" and answered["tls.server.keyPassword"] == "***"
    assert not set(answered) & CONFIG_KEYS, sorted(set(answered) & CONFIG_KEYS)
    assert not [secret for secret in SECRETS if secret in text]
    assert controller.all_config_properties() == answered


def service(tmp_path: Path, init_user: str, *existing: User) -> AuthService:
    config = AuthConfig.from_properties({"authenticationEnabled": "true", **METADATA,
                                         "initAuthenticationUser": init_user})
    store = AuthMetadataStore(tmp_path)
    for user in existing:
        store.users[user.username] = user
    return AuthService(config, store, "DefaultCluster")


@pytest.mark.parametrize("init_user", ['{"username":"root","password":""}', '{"username":"root","password":"  "}',
                                       '{"username":"root","password":null}'])
def test_an_initial_user_with_a_blank_password_is_never_made(tmp_path: Path, init_user: str) -> None:
    auth = service(tmp_path, init_user)
    with pytest.raises(ValueError, match="^initAuthenticationUser: password can not be blank$"):
        auth.init_users()
    assert auth.store.user("root") is None
    assert not (tmp_path / "users.json").exists()


def test_an_initial_user_with_a_blank_name_is_never_made(tmp_path: Path) -> None:
    auth = service(tmp_path, '{"username":" ","password":"pw"}')
    with pytest.raises(ValueError, match="^initAuthenticationUser: username can not be blank$"):
        auth.init_users()
    assert auth.store.users == {}


def test_an_existing_initial_user_is_left_alone_as_apache_leaves_it(tmp_path: Path) -> None:
    root = User("root", "kept", UserType.SUPER, UserStatus.ENABLE)
    assert service(tmp_path, '{"username":"root","password":""}', root).init_users() == []
    assert root.password == "kept"


def test_the_broker_does_not_start_and_says_why_in_one_line(tmp_path: Path) -> None:
    controller = broker(tmp_path, authenticationEnabled="true", **METADATA,
                        initAuthenticationUser='{"username":"root","password":null}')
    with pytest.raises(StartError) as refused:
        asyncio.run(controller._start_auth())
    assert str(refused.value) == "ACL 2.0: initAuthenticationUser: password can not be blank"
    assert controller.auth is None
