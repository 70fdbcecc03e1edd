"""ACL 2.0 decisions, sans-IO: authentication of a signed request and authorization of what it asks.

Authentication (DefaultAuthenticationHandler): no user name, an unknown user, a disabled user or a
signature that does not match is refused, with Apache's remark. Authorization
(UserAuthorizationHandler, then AclAuthorizationHandler): a Super user may do anything; a Normal
user needs a matching entry. Entries of the Custom policy are matched first, the Default policy's
only when no Custom entry matches. Among the matches the most specific resource decides: a typed
resource before `*`; a literal name before a prefix before `Type:*`; a longer prefix before a
shorter one; at equal specificity Deny before Allow. The decision of the winner is the answer:
a narrow Allow inside a broad Deny lets in, a narrow Deny inside a broad Allow keeps out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from mqtools.common.auth.model import (
    Acl,
    Action,
    Decision,
    PolicyEntry,
    PolicyType,
    Resource,
    ResourcePattern,
    ResourceType,
    User,
    UserStatus,
    UserType,
)
from mqtools.common.auth.signature import SignedRequest, signature_matches


class AuthError(Exception):
    """A refusal: the remark Apache's AuthenticationException or AuthorizationException carries."""


@dataclass(frozen=True, slots=True)
class AccessRequest:
    """One authorization context: who asks, for which resource, which actions, from where."""

    username: str | None
    resource: Resource
    actions: tuple[Action, ...]
    source_ip: str | None

    @property
    def subject_key(self) -> str:
        return f"User:{self.username}"


def authenticate(request: SignedRequest, user: User | None) -> None:
    """Raise AuthError when `request` (claiming `user`, looked up by its name) is not authentic."""
    if not request.username:
        raise AuthError("username cannot be null.")
    if user is None:
        raise AuthError(f"User:{request.username} is not found.")
    if user.user_status is UserStatus.DISABLE:
        raise AuthError(f"User:{request.username} is disabled.")
    if not signature_matches(request, user.password):
        raise AuthError("check signature failed.")


def _specificity(entry: PolicyEntry) -> tuple[int, int, int]:
    """Sort key: smaller is more specific (AclAuthorizationHandler.comparePolicyEntries)."""
    r = entry.resource
    typed = 1 if r.type is ResourceType.ANY else 0
    pattern = {ResourcePattern.LITERAL: 0, ResourcePattern.PREFIXED: 1}.get(r.pattern, 2)
    longer = -len(r.name or "") if r.pattern is ResourcePattern.PREFIXED else 0
    return typed, pattern, longer


def _compare(a: PolicyEntry, b: PolicyEntry) -> int:
    ka, kb = _specificity(a), _specificity(b)
    if ka != kb:
        return -1 if ka < kb else 1
    deny_a, deny_b = a.decision is Decision.DENY, b.decision is Decision.DENY
    return 0 if deny_a == deny_b else (-1 if deny_a else 1)


def matching_entry(acl: Acl, request: AccessRequest) -> PolicyEntry | None:
    """The entry that decides `request`, or None when no entry of either policy matches."""
    def matches(policy_type: PolicyType) -> list[PolicyEntry]:
        policy = acl.policy(policy_type)
        if policy is None:
            return []
        return [e for e in policy.entries if e.resource.matches(request.resource)
                and e.matches_actions(list(request.actions)) and e.matches_source(request.source_ip)]

    found = matches(PolicyType.CUSTOM) or matches(PolicyType.DEFAULT)
    if not found:
        return None
    return min(found, key=functools.cmp_to_key(_compare))


def _refuse(request: AccessRequest, detail: str) -> AuthError:
    return AuthError(f"{request.subject_key} has no permission to access {request.resource.key} "
                     f"from {request.source_ip}, {detail}")


def authorize(request: AccessRequest, find_user: Callable[[str], User | None],
              find_acl: Callable[[str], Acl | None]) -> None:
    """Raise AuthError when `request` is not allowed. A request without a user is refused as Apache
    refuses it (its handler fails on the missing subject and answers the generic remark)."""
    if not request.username:
        raise AuthError("Authorization failed. Please verify your access rights and try again.")
    user = find_user(request.username)
    if user is None:
        raise AuthError(f"User:{request.username} not found.")
    if user.user_type is UserType.SUPER:
        return
    acl = find_acl(request.subject_key)
    if acl is None:
        raise _refuse(request, "no matched policies.")
    entry = matching_entry(acl, request)
    if entry is None:
        raise _refuse(request, "no matched policies.")
    if entry.decision is Decision.DENY:
        raise _refuse(request, "the decision is deny.")
