"""The ACL 2.0 signature check on a remoting request, sans-IO (DefaultAuthenticationHandler's rule).

The user is the request's AccessKey field. The signed content is the values of every extension
field but Signature, ordered by key, then the body; the signature is base64(HmacSHA1(password,
content)), the signing RocketMQ clients (and mq's, mqtools.remoting.acl) already do for ACL 1.0.
`_UNIQUE_KEY_QUERY` is left out only for clients of version 4.9.3 or older, as Apache's
DefaultAuthenticationContextBuilder (and 4.9.4+'s ACL 1.0 check) does: `unsigned_fields`, which the ACL 1.0
check shares. Comparison is constant-time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
#: MQVersion.Version.V4_9_3.ordinal(): older clients do not sign the unique-key query flag
V4_9_3 = 399
_UNSIGNED = frozenset((SIGNATURE,))
_UNSIGNED_BEFORE_4_9_4 = frozenset((SIGNATURE, UNIQUE_MSG_QUERY_FLAG))


def unsigned_fields(version: int) -> frozenset[str]:
    """The extension fields a request of this client version leaves out of its signature: Signature, and the
    unique-key query flag for clients of 4.9.3 or older (newer ones sign it, so a relay cannot flip it)."""
    return _UNSIGNED_BEFORE_4_9_4 if version <= V4_9_3 else _UNSIGNED


@dataclass(frozen=True, slots=True)
class SignedRequest:
    """What authentication reads from one request: the claimed user, the signature, the content."""

    username: str | None
    signature: str | None
    content: bytes

    @classmethod
    def of(cls, ext_fields: dict[str, str], body: bytes | bytearray | memoryview | None,
           version: int) -> SignedRequest:
        if ACCESS_KEY not in ext_fields:
            return cls(None, None, b"")
        skip = unsigned_fields(version)
        content = "".join(ext_fields[k] for k in sorted(ext_fields) if k not in skip).encode()
        if body:
            content += bytes(body)
        return cls(ext_fields[ACCESS_KEY], ext_fields.get(SIGNATURE), content)


def signature_of(content: bytes, password: str) -> str:
    """AclSigner.calSignature: base64(HmacSHA1(password, content))."""
    return base64.b64encode(hmac.new(password.encode(), content, hashlib.sha1).digest()).decode()


def signature_matches(request: SignedRequest, password: str | None) -> bool:
    if request.signature is None or password is None:
        return False
    return hmac.compare_digest(signature_of(request.content, password).encode(), request.signature.encode())
