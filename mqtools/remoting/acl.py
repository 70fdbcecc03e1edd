"""RocketMQ ACL 1.0 request signing (AclClientRPCHook / PlainAccessValidator's content rule), sans-IO.

The signed content is the values of the request's extension fields, sorted by key (AccessKey and
SecurityToken included, Signature excluded), concatenated as UTF-8, followed by the raw body. The signature
is base64(HmacSHA1(secretKey, content)). A client signs every field but Signature, as Apache's
AclClientRPCHook does; the broker's check leaves the unique-key query flag out only for clients of 4.9.3 or
older (`unsigned_fields`, the ACL 2.0 check's rule too). Signing here and verifying on the broker share
`_mac()`, so the two sides cannot drift apart.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac

from mqtools.common.auth.signature import ACCESS_KEY, SIGNATURE, unsigned_fields
from mqtools.common.security import SessionCredentials
from mqtools.remoting.command import RemotingCommand

SECRET_KEY = "SecretKey"
SECURITY_TOKEN = "SecurityToken"
#: a client signs every field but Signature (AclClientRPCHook)
_CLIENT_UNSIGNED = frozenset((SIGNATURE,))


def _fields(ext_fields: dict[str, str], unsigned: frozenset[str]) -> bytes:
    """The signed fields' part of the content. Java's TreeMap orders keys by UTF-16 code unit; for
    the ASCII keys RocketMQ uses that is Python's order."""
    return "".join([ext_fields[key] for key in sorted(ext_fields) if key not in unsigned]).encode()


@functools.lru_cache(maxsize=1024)
def _keyed(secret_key: str) -> hmac.HMAC:
    """HmacSHA1 keyed once per secret; each request copies it instead of keying again."""
    return hmac.new(secret_key.encode(), digestmod=hashlib.sha1)


def _mac(ext_fields: dict[str, str], body: bytes | bytearray | memoryview | None, secret_key: str,
         unsigned: frozenset[str]) -> str:
    """base64(HmacSHA1(secret, fields then body)), the body fed as is (never copied into the content)."""
    mac = _keyed(secret_key).copy()
    mac.update(_fields(ext_fields, unsigned))
    if body:
        mac.update(body)
    return base64.b64encode(mac.digest()).decode()


def sign(cmd: RemotingCommand, credentials: SessionCredentials) -> None:
    """Add AccessKey (and SecurityToken), then the Signature over everything, as the Java hook does."""
    ext = cmd.ext_fields
    ext[ACCESS_KEY] = credentials.access_key
    if credentials.security_token is not None:
        ext[SECURITY_TOKEN] = credentials.security_token
    ext[SIGNATURE] = _mac(ext, cmd.body, credentials.secret_key, _CLIENT_UNSIGNED)


def verify(cmd: RemotingCommand, secret_key: str) -> bool:
    """True when the request's Signature matches `secret_key` (constant-time comparison), its content read by
    the rule of the client version the request carries."""
    given = cmd.ext_fields.get(SIGNATURE)
    if given is None:
        return False
    expected = _mac(cmd.ext_fields, cmd.body, secret_key, unsigned_fields(cmd.version))
    return hmac.compare_digest(expected.encode(), given.encode())
