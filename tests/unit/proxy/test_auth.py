"""The proxy's ACL 2.0 authentication without a cluster: the 5.1.2 client's signature parsed and checked as
Apache's DefaultAuthenticationContextBuilder and DefaultAuthenticationHandler do, the user cache bounded and
timed, and the auth keys of rmq-proxy.json."""

from __future__ import annotations

import asyncio

import pytest
from support.proxyauth import STAMP, FakeAuthenticator, headers

from mqtools.proxy.auth import AuthenticationRefused, check, signed_call
from mqtools.proxy.config import ProxyConfig, ProxyConfigError
from mqtools.proxy.errors import Code
from mqtools.remoting.auth_bodies import UserInfo


def test_the_clients_signature_matches_the_users_password() -> None:
    call = signed_call(headers("app1", "pw-1"))
    assert (call.username, call.content) == ("app1", STAMP.encode())
    check(call, UserInfo("app1", "pw-1", "Normal", "enable"))
    with pytest.raises(AuthenticationRefused, match=r"^check signature failed\.$"):
        check(call, UserInfo("app1", "pw-2", "Normal", "enable"))
    with pytest.raises(AuthenticationRefused, match=r"^User:app1 is not found\.$"):
        check(call, None)
    with pytest.raises(AuthenticationRefused, match=r"^User:app1 is disabled\.$"):
        check(call, UserInfo("app1", "pw-1", "Normal", "disable"))
    # Credential may carry more after a slash (Java's client sends AK/...); the user is what comes before it
    assert signed_call({**headers("app1", "pw-1"), "authorization": headers("app1", "pw-1")["authorization"]
                        .replace("Credential=app1", "Credential=app1/extra")}).username == "app1"


@pytest.mark.parametrize(("given", "message"), [
    ({"authorization": "MQv2-HMAC-SHA1 Credential=a, Signature=00"}, "datetime is null."),
    ({"x-mq-date-time": STAMP, "authorization": "MQv2-HMAC-SHA1"}, "authentication header is incorrect."),
    ({"x-mq-date-time": STAMP, "authorization": "MQv2-HMAC-SHA1 Credential"},
     "authentication keyValues length is incorrect, actual length=1."),
    ({"x-mq-date-time": STAMP, "authorization": "MQv2-HMAC-SHA1 Credential=a, Signature=xyz"},
     "create authentication context error."),
])
def test_malformed_headers_are_refused_with_apaches_messages(given: dict[str, str], message: str) -> None:
    with pytest.raises(AuthenticationRefused) as refused:
        signed_call(given)
    assert (refused.value.code, refused.value.message) == (Code.UNAUTHORIZED, message)


def test_users_are_cached_for_the_ttl_and_the_cache_is_bounded() -> None:
    clock = [0.0]
    auth = FakeAuthenticator({"app1": UserInfo("app1", "pw", "Normal", "enable")}, clock, ttl=60.0, max_users=3,
                             whitelist=frozenset({"apache.rocketmq.v2.QueryRouteRequest"}))

    async def run() -> None:
        await auth.authenticate(headers("app1", "pw"), "apache.rocketmq.v2.SendMessageRequest")
        await auth.authenticate(headers("app1", "pw"), "apache.rocketmq.v2.SendMessageRequest")
        assert auth.loads == ["app1"]
        with pytest.raises(AuthenticationRefused, match="username cannot be null"):
            await auth.authenticate({}, "apache.rocketmq.v2.SendMessageRequest")
        await auth.authenticate({}, "apache.rocketmq.v2.QueryRouteRequest")  # whitelisted
        for name in ("u1", "u2", "u3", "u4"):
            with pytest.raises(AuthenticationRefused, match=f"User:{name} is not found"):
                await auth.authenticate(headers(name, "pw"), "apache.rocketmq.v2.SendMessageRequest")
        assert len(auth._users.entries) == 3  # an unknown-user flood does not grow the cache
        clock[0] = 61.0
        auth.users["u4"] = UserInfo("u4", "pw", "Normal", "enable")
        await auth.authenticate(headers("u4", "pw"), "apache.rocketmq.v2.SendMessageRequest")  # reloaded

    asyncio.run(run())
    assert auth.loads.count("u4") == 2


def test_auth_keys_of_the_config_file() -> None:
    config = ProxyConfig(namesrv_addr="127.0.0.1:9876")
    config.apply({"authenticationEnabled": "true", "userCacheRefreshSecond": 5,
                  "innerClientAuthenticationCredentials": '{"accessKey": "root", "secretKey": "s"}',
                  "tlsCertPath": "/c.pem", "tlsKeyPath": "/k.pem", "tls.enable": "true"})
    assert config.authentication_enabled and config.user_cache_refresh_second == 5 and config.tls_enable
    assert config.inner_credentials() == ("root", "s")
    with pytest.raises(ProxyConfigError, match="innerClientAuthenticationCredentials"):
        config.apply({"innerClientAuthenticationCredentials": "not json"})
    with pytest.raises(ProxyConfigError, match="tlsCertPath and tlsKeyPath"):
        ProxyConfig().apply({"tlsCertPath": "/c.pem"})
