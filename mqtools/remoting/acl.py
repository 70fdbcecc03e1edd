"""RocketMQ ACL 1.0 request signing (AclClientRPCHook / PlainAccessValidator's content rule), sans-IO.

The signed content is the values of the request's extension fields, sorted by key (AccessKey and
SecurityToken included, Signature and the unique-key query flag excluded), concatenated as UTF-8,
followed by the raw body. The signature is base64(HmacSHA1(secretKey, content)). Signing here
and verifying on the broker share `_mac()`, so the two sides cannot drift apart.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac

from mqtools.common.security import SessionCredentials
from mqtools.remoting.command import RemotingCommand

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
#: MixAll.UNIQUE_MSG_QUERY_FLAG: added by the broker side of a query, never signed
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
_UNSIGNED = frozenset((SIGNATURE, UNIQUE_MSG_QUERY_FLAG))


def _fields(ext_fields: dict[str, str]) -> bytes:
    """The signed fields' part of the content. Java's TreeMap orders keys by UTF-16 code unit; for
    the ASCII keys RocketMQ uses that is Python's order."""
    return "".join([ext_fields[key] for key in sorted(ext_fields) if key not in _UNSIGNED]).encode()


@functools.lru_cache(maxsize=1024)
def _keyed(secret_key: str) -> hmac.HMAC:
    """HmacSHA1 keyed once per secret; each request copies it instead of keying again."""
    return hmac.new(secret_key.encode(), digestmod=hashlib.sha1)


def _mac(ext_fields: dict[str, str], body: bytes | bytearray | memoryview | None, secret_key: str) -> str:
    """base64(HmacSHA1(secret, fields then body)), the body fed as is (never copied into the content)."""
    mac = _keyed(secret_key).copy()
    mac.update(_fields(ext_fields))
    if body:
        mac.update(body)
    return base64.b64encode(mac.digest()).decode()


def sign(cmd: RemotingCommand, credentials: SessionCredentials) -> None:
    """Add AccessKey (and SecurityToken), then the Signature over everything, as the Java hook does."""
    ext = cmd.ext_fields
    ext[ACCESS_KEY] = credentials.access_key
    if credentials.security_token is not None:
        ext[SECURITY_TOKEN] = credentials.security_token
    ext[SIGNATURE] = _mac(ext, cmd.body, credentials.secret_key)


def verify(cmd: RemotingCommand, secret_key: str) -> bool:
    """True when the request's Signature matches `secret_key` (constant-time comparison)."""
    given = cmd.ext_fields.get(SIGNATURE)
    if given is None:
        return False
    expected = _mac(cmd.ext_fields, cmd.body, secret_key)
    return hmac.compare_digest(expected.encode(), given.encode())
