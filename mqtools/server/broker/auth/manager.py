"""The ACL 2.0 metadata rules: what creating, updating and deleting users and ACLs checks, with the
remarks of Apache's AuthenticationMetadataManagerImpl and AuthorizationMetadataManagerImpl.

A refusal raises AuthError (the service answers NO_PERMISSION with its text, as Apache does for its
Authentication/AuthorizationException).
"""

from __future__ import annotations

from mqtools.common.auth.model import (
    Acl,
    Action,
    Policy,
    PolicyType,
    Resource,
    User,
    UserStatus,
    UserType,
    subject_username,
    valid_ip_or_cidr,
)
from mqtools.common.auth.policy import AuthError
from mqtools.server.broker.auth.store import AuthMetadataStore

# -- the rules ---------------------------------------------------------------------------------------


class AuthMetadataManager:
    """Users and ACLs with Apache's checks over an AuthMetadataStore."""

    def __init__(self, store: AuthMetadataStore) -> None:
        self.store = store

    def init_user(self, username: str, password: str) -> bool:
        """initAuthenticationUser / innerClientAuthenticationCredentials: a Super user, made when missing
        with createUser's checks (AuthError on a blank name or password: nobody may sign as it)."""
        if self.store.user(username) is not None:
            return False
        user = User(username, password, UserType.SUPER, UserStatus.ENABLE)
        self._check_new(user)
        self.store.users[username] = user
        return True

    @staticmethod
    def _check_new(user: User) -> None:
        """What Apache's createUser validates before anything else."""
        if not user.username.strip():
            raise AuthError("username can not be blank")
        if not (user.password or "").strip():
            raise AuthError("password can not be blank")

    async def create_user(self, user: User) -> None:
        self._check_new(user)
        user.user_type = user.user_type or UserType.NORMAL
        user.user_status = user.user_status or UserStatus.ENABLE

        def create(old: User | None) -> User:
            if old is not None:
                raise AuthError("The user is existed")
            return user
        await self.store.change_user(user.username, create)

    async def update_user(self, user: User) -> None:
        if not user.username.strip():
            raise AuthError("username can not be blank")

        def update(old: User | None) -> User:
            if old is None:
                raise AuthError("The user is not exist")
            return User(old.username, user.password if (user.password or "").strip() else old.password,
                        user.user_type or old.user_type, user.user_status or old.user_status)
        await self.store.change_user(user.username, update)

    async def delete_user(self, username: str) -> None:
        """The user and its ACL go together: the ACL first, so that a write the disk refuses leaves the user to
        delete again (the other way round, an ACL no user owns would stay)."""
        if not username.strip():
            raise AuthError("username can not be blank")
        await self.store.change_acl(f"User:{username}", lambda _old: None)
        await self.store.change_user(username, lambda _old: None)

    def is_super(self, username: str) -> bool:
        user = self.store.user(username)
        if user is None:
            raise AuthError(f"User:{username} is not found")
        return user.user_type is UserType.SUPER

    def list_users(self, filter_: str | None) -> list[User]:
        return [u for k, u in sorted(self.store.users.items()) if not filter_ or filter_ in k]

    # ACLs ----------------------------------------------------------------------------------------

    def _check_subject(self, subject: str, remark: str) -> None:
        name = subject_username(subject)
        if name is None:
            raise AuthError("The subject type is null.")
        if self.store.user(name) is None:
            raise AuthError(remark)

    @staticmethod
    def _validate(acl: Acl) -> None:
        if subject_username(acl.subject) is None:
            raise AuthError("The subject type is null.")
        if not acl.policies:
            raise AuthError("The policies is empty.")
        for policy in acl.policies:
            if not policy.entries:
                raise AuthError("The policy entries is empty.")
            for entry in policy.entries:
                if entry.resource is None:
                    raise AuthError("The resource is null.")
                if not entry.actions:
                    raise AuthError("The actions is empty.")
                if Action.ANY in entry.actions:
                    raise AuthError("The actions can not be Any.")
                for ip in entry.source_ips or []:
                    if not ip.strip():
                        raise AuthError("The source ip is empty.")
                    if not valid_ip_or_cidr(ip):
                        raise AuthError("The source ip is invalid.")
                if entry.decision is None:
                    raise AuthError("The decision is null or illegal.")

    async def create_or_update_acl(self, acl: Acl) -> None:
        """createAcl and updateAcl do the same in Apache: merge into the subject's ACL, or create it. A new ACL is
        merged too, so two policies of one type in the request become one (matching reads only the first of a
        type: a Deny in a second was listed and never applied)."""
        self._validate(acl)
        for policy in acl.policies:
            policy.policy_type = policy.policy_type or PolicyType.CUSTOM
        self._check_subject(acl.subject, f"The subject of {acl.subject} is not exist.")

        def merge(old: Acl | None) -> Acl:
            merged = old if old is not None else Acl(acl.subject)
            merged.update_policies(acl.policies)
            return merged
        await self.store.change_acl(acl.subject, merge)

    async def delete_acl(self, subject: str, policy_type: PolicyType | None, resource: Resource | None) -> None:
        """The subject's whole ACL, or (with a resource) one entry of one policy (Custom by default)."""
        if not subject:
            raise AuthError("The subject is null.")
        name = subject_username(subject)
        if name is None or self.store.user(name) is None:
            raise AuthError("The subject is not exist.")

        def delete(old: Acl | None) -> Acl | None:
            if old is None:
                raise AuthError("The acl is not exist.")
            if resource is None:
                return None
            old.delete_entry(policy_type or PolicyType.CUSTOM, resource)
            return old if old.policies else None
        await self.store.change_acl(subject, delete)

    def get_acl(self, subject: str) -> Acl | None:
        name = subject_username(subject)
        if name is None or self.store.user(name) is None:
            raise AuthError("The subject is not exist.")
        return self.store.acl(subject)

    def list_acls(self, subject_filter: str | None, resource_filter: str | None) -> list[Acl]:
        """LocalAuthorizationMetadataProvider.listAcl: subjects containing the filter; with a resource
        filter (that the subject key does not contain) only entries whose resource key contains it."""
        out = []
        for key, acl in sorted(self.store.acls.items()):
            if subject_filter and subject_filter not in key:
                continue
            policies = []
            for p in acl.policies:
                entries = p.entries
                if resource_filter and resource_filter not in key:
                    entries = [e for e in entries if resource_filter in e.resource.key]
                if entries:
                    policies.append(Policy(p.policy_type, entries))
            if policies:
                out.append(Acl(key, policies))
        return out
