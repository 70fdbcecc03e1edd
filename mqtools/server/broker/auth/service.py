"""The broker's ACL 2.0 service: the request check and the AUTH_* admin requests (AdminBrokerProcessor).

Every request is first authenticated (when authenticationEnabled) and then authorized (when
authorizationEnabled), as Apache's AuthenticationPipeline and AuthorizationPipeline run; a refusal is
answered NO_PERMISSION with Apache's remark. Request codes in a whitelist skip that check. When ACL 1.0
(aclEnable) is on too, its check runs first and both must pass.

The admin requests answer as Apache's AdminBrokerProcessor answers: SUCCESS; INVALID_PARAMETER
"The username is blank"; SYSTEM_ERROR when a Normal user would create or update a Super user; and
NO_PERMISSION with the metadata manager's remark for everything it refuses (a null policy, entry or source IP
too). A malformed body, or a change the disk refuses (nothing of it is then in force), answers SYSTEM_ERROR
naming it, logged as one rate-limited line. AUTH_GET_USER and
AUTH_GET_ACL answer SUCCESS without a body when there is nothing; a list answers no body when empty.
GET_USER and LIST_USER send passwords in clear, as Apache does: the admin requests need Cluster
Update/Get (a Super user, or a rule that gives them) whenever authorization is on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from mqtools.common.auth.model import PolicyType, Resource, UserType
from mqtools.common.auth.policy import AuthError, authenticate, authorize
from mqtools.common.auth.signature import ACCESS_KEY, SignedRequest
from mqtools.common.log_limiter import LimitedLog
from mqtools.remoting.auth_bodies import (
    AclInfo,
    UserInfo,
    acl_info_of,
    acl_of,
    bodies_to_json,
    info_of,
    migrate_plain_access,
    user_of,
)
from mqtools.remoting.bodies import PlainAccessConfig
from mqtools.remoting.codes import RequestCode, ResponseCode, code_name
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import BodyError
from mqtools.server.broker.acl.addresses import host_of
from mqtools.server.broker.acl.codes import served_code
from mqtools.server.broker.auth.config import AuthConfig
from mqtools.server.broker.auth.contexts import ContextBuilder
from mqtools.server.broker.auth.manager import AuthMetadataManager
from mqtools.server.broker.auth.store import AuthMetadataStore, MetadataWriteError

if TYPE_CHECKING:
    from mqtools.remoting.server import AccessCheck, RemotingServer
    from mqtools.remoting.transport import RemotingConnection

log = logging.getLogger(__name__)

SYSTEM_ERROR_REMARK = "An system error occurred, please try again later."
NOT_CONFIGURED = "The authenticationMetadataProvider is not configured"


class AuthService:
    def __init__(self, config: AuthConfig, store: AuthMetadataStore, cluster: str,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.store = store
        self.manager = AuthMetadataManager(store)
        self.contexts = ContextBuilder(cluster)
        self.refusals = LimitedLog(log, clock)
        #: malformed admin requests and failed writes: a client sending them in a loop cannot flood the log
        self.failures = LimitedLog(log, clock)
        self._previous: AccessCheck | None = None

    # ------------------------------------------------------------------ start-up

    def init_users(self) -> list[str]:
        """Create initAuthenticationUser and innerClientAuthenticationCredentials when missing; ValueError
        naming the key when one would be made with a blank name or password (Apache's broker stops too)."""
        made: list[str] = []
        for user in self.config.initial_users:
            try:
                if self.manager.init_user(user.username, user.password):
                    made.append(user.username)
            except AuthError as exc:
                raise ValueError(f"{user.key}: {exc}") from None
        if made:
            self.store.write_now()
        return made

    def migrate(self, accounts: list[PlainAccessConfig]) -> list[str]:
        """migrateAuthFromV1Enabled: each plain_acl.yml account whose user does not exist yet becomes a
        user and its rules (AuthMigrator); existing users are left alone."""
        made: list[str] = []
        for account in accounts:
            if not account.access_key or self.store.user(account.access_key) is not None:
                continue
            info, acl = migrate_plain_access(account)
            self.store.users[account.access_key] = user_of(info)
            if acl is not None:
                converted = acl_of(acl, None)
                self.store.acls[converted.subject] = converted
            made.append(account.access_key)
        if made:
            self.store.write_now()
        return made

    def install(self, server: RemotingServer) -> None:
        self._previous = server.access_check
        if self.config.any_enabled:
            server.access_check = self.check
        for code, handler in ((RequestCode.AUTH_CREATE_USER, self.create_user),
                              (RequestCode.AUTH_UPDATE_USER, self.update_user),
                              (RequestCode.AUTH_DELETE_USER, self.delete_user),
                              (RequestCode.AUTH_GET_USER, self.get_user),
                              (RequestCode.AUTH_LIST_USER, self.list_user),
                              (RequestCode.AUTH_CREATE_ACL, self.create_acl),
                              (RequestCode.AUTH_UPDATE_ACL, self.update_acl),
                              (RequestCode.AUTH_DELETE_ACL, self.delete_acl),
                              (RequestCode.AUTH_GET_ACL, self.get_acl),
                              (RequestCode.AUTH_LIST_ACL, self.list_acl)):
            server.register(code, handler)

    # ------------------------------------------------------------------ the check

    def refusal(self, req: RemotingCommand, peer: str) -> str | None:
        """Why `req` from `peer` is refused, or None."""
        cfg, code = self.config, str(served_code(req.code))
        try:
            if cfg.authentication_enabled and code not in cfg.authentication_whitelist:
                if not cfg.authentication_metadata:
                    raise AuthError(NOT_CONFIGURED)
                signed = SignedRequest.of(req.ext_fields, req.body, req.version)
                authenticate(signed, self.store.user(signed.username) if signed.username else None)
            if cfg.authorization_enabled and code not in cfg.authorization_whitelist:
                for context in self.contexts.build(req, host_of(peer)):
                    if not cfg.authorization_metadata:
                        raise AuthError(NOT_CONFIGURED)
                    authorize(context, self.store.user, self.store.acl)
        except AuthError as exc:
            return str(exc)
        return None

    def check(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand | None:
        if self._previous is not None and (refused := self._previous(conn, req)) is not None:
            return refused
        reason = self.refusal(req, conn.peer)
        if reason is None:
            return None
        self.refusals.info("auth", "[AUTH] refused %s from %s as %s: %s", code_name(req.code), conn.peer,
                           req.ext_fields.get(ACCESS_KEY), reason)
        return req.response(ResponseCode.NO_PERMISSION, reason)

    # ------------------------------------------------------------------ admin requests

    def _not_super(self, req: RemotingCommand) -> bool:
        """isNotSuperUserLogin: a request without an AccessKey (authentication off) counts as super."""
        access_key = req.ext_fields.get(ACCESS_KEY)
        return bool(access_key) and not self.manager.is_super(access_key)  # type: ignore[arg-type]

    async def _answer(self, req: RemotingCommand, action: Callable[[], object]) -> RemotingCommand:
        if not self.config.has_metadata:
            log.error("AUTH request %s refused: no metadata provider is configured", code_name(req.code))
            return req.response(ResponseCode.SYSTEM_ERROR, SYSTEM_ERROR_REMARK)
        try:
            result = action()
            if hasattr(result, "__await__"):
                result = await result  # type: ignore[misc]
        except AuthError as exc:
            return req.response(ResponseCode.NO_PERMISSION, str(exc))
        except (BodyError, MetadataWriteError) as exc:
            self.failures.warning("auth-admin", "AUTH request %s refused: %s", code_name(req.code), exc)
            return req.response(ResponseCode.SYSTEM_ERROR, str(exc))
        except (ValueError, TypeError, AttributeError, KeyError):
            self.failures.failure("auth-admin-bug", "AUTH request %s failed", code_name(req.code))
            return req.response(ResponseCode.SYSTEM_ERROR, SYSTEM_ERROR_REMARK)
        if isinstance(result, RemotingCommand):
            return result
        return req.response(ResponseCode.SUCCESS, body=result if isinstance(result, bytes) else None)

    def _user_body(self, req: RemotingCommand) -> UserInfo:
        info = UserInfo.from_request(req.body) if req.body else UserInfo()
        info.username = req.ext_fields.get("username", "")
        return info

    async def create_user(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        if not req.ext_fields.get("username"):
            return req.response(ResponseCode.INVALID_PARAMETER, "The username is blank")

        async def act() -> RemotingCommand | None:
            user = user_of(self._user_body(req))
            if user.user_type is UserType.SUPER and self._not_super(req):
                return req.response(ResponseCode.SYSTEM_ERROR, "The super user can only be create by super user")
            await self.manager.create_user(user)
            log.info("ACL 2.0 user %s created", user.username)
            return None
        return await self._answer(req, act)

    async def update_user(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        if not req.ext_fields.get("username"):
            return req.response(ResponseCode.INVALID_PARAMETER, "The username is blank")

        async def act() -> RemotingCommand | None:
            user = user_of(self._user_body(req))
            if user.user_type is UserType.SUPER and self._not_super(req):
                return req.response(ResponseCode.SYSTEM_ERROR, "The super user can only be update by super user")
            old = self.store.user(user.username)
            if old is None:
                raise AuthError("The user is not exist")
            if old.user_type is UserType.SUPER and self._not_super(req):
                raise AuthError("The super user can only be update by super user")
            await self.manager.update_user(user)
            log.info("ACL 2.0 user %s updated", user.username)
            return None
        return await self._answer(req, act)

    async def delete_user(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        username = req.ext_fields.get("username", "")

        async def act() -> None:
            if not username.strip():
                raise AuthError("username can not be blank")
            user = self.store.user(username)
            if user is None:
                return
            if user.user_type is UserType.SUPER and self._not_super(req):
                raise AuthError("The super user can only be update by super user")
            await self.manager.delete_user(username)
            log.info("ACL 2.0 user %s deleted", username)
        return await self._answer(req, act)

    async def get_user(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        username = req.ext_fields.get("username", "")
        if not username.strip():
            return req.response(ResponseCode.INVALID_PARAMETER, "The username is blank")

        def act() -> bytes | None:
            user = self.store.user(username)
            return info_of(user).to_json() if user is not None else None
        return await self._answer(req, act)

    async def list_user(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        def act() -> bytes | None:
            users = self.manager.list_users(req.ext_fields.get("filter"))
            return bodies_to_json([info_of(u) for u in users]) if users else None
        return await self._answer(req, act)

    async def _acl_write(self, req: RemotingCommand) -> RemotingCommand:
        subject = req.ext_fields.get("subject")
        info = AclInfo.from_request(req.body) if req.body else None
        if info is None or not info.policies:
            return req.response(ResponseCode.SYSTEM_ERROR, "The body of acl is null")

        async def act() -> None:
            acl = acl_of(info, subject)
            await self.manager.create_or_update_acl(acl)
            log.info("ACL 2.0 rules of %s written", acl.subject)
        return await self._answer(req, act)

    async def create_acl(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        return await self._acl_write(req)

    async def update_acl(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        return await self._acl_write(req)

    async def delete_acl(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        ext = req.ext_fields

        async def act() -> None:
            subject = ext.get("subject", "")
            await self.manager.delete_acl(subject, PolicyType.by_name(ext.get("policyType")),
                                          Resource.parse(ext.get("resource")))
            log.info("ACL 2.0 rules of %s deleted (%s)", subject, ext.get("resource") or "all")
        return await self._answer(req, act)

    async def get_acl(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        def act() -> bytes | None:
            acl = self.manager.get_acl(req.ext_fields.get("subject", ""))
            return acl_info_of(acl).to_json() if acl is not None else None
        return await self._answer(req, act)

    async def list_acl(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        def act() -> bytes | None:
            acls = self.manager.list_acls(req.ext_fields.get("subjectFilter"), req.ext_fields.get("resourceFilter"))
            return bodies_to_json([acl_info_of(a) for a in acls]) if acls else None
        return await self._answer(req, act)
