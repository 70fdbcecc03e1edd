"""The gRPC proxy's auth tests without a cluster: a 5.1.2 client's signed headers, and an Authenticator whose
users come from a dict."""

from __future__ import annotations

from rocketmq.v5.util.signature import Signature

from mqtools.proxy.auth import Authenticator
from mqtools.remoting.auth_bodies import UserInfo

STAMP = "20261129T030000Z"


def headers(user: str, secret: str, stamp: str = STAMP) -> dict[str, str]:
    return {"x-mq-date-time": stamp, "authorization": f"MQv2-HMAC-SHA1 Credential={user}, "
            f"SignedHeaders=x-mq-date-time, Signature={Signature.sign(secret, stamp)}"}


class FakeAuthenticator(Authenticator):
    """Users from a dict instead of a broker, counting the loads."""

    def __init__(self, users: dict[str, UserInfo], clock: list[float], **kw: object) -> None:
        super().__init__(None, "C", clock=lambda: clock[0], **kw)  # type: ignore[arg-type]
        self.users = users
        self.loads: list[str] = []

    async def _load(self, username: str) -> UserInfo | None:
        self.loads.append(username)
        return self.users.get(username)
