"""The broker's ACL service: the request hook and the ACL admin requests (AdminBrokerProcessor's
UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG, GET_BROKER_CLUSTER_ACL_INFO,
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, GET_BROKER_CLUSTER_ACL_CONFIG).

An account update merges into the account: what its header leaves out keeps its value, as Apache's
createAclAccessConfigMap keeps a null field; an empty topicPerms, groupPerms or whiteRemoteAddress clears it
(`given_fields`).

A refusal is answered NO_PERMISSION with a remark naming the access key, the resource and the
missing permission (RocketMQ 4.x answers SYSTEM_ERROR carrying the AclException text; a client
treats both as a failed request, and NO_PERMISSION names the cause). Refusals are logged through
the rate limiter: a client retrying a refused send cannot fill the log. Secrets never reach a
log line or a response: GET_BROKER_CLUSTER_ACL_CONFIG sends each account's secret as `****`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from mqtools.common.log_limiter import LimitedLog
from mqtools.remoting.bodies import AclConfigBody, PlainAccessConfig, comma_list
from mqtools.remoting.codes import RequestCode, ResponseCode, code_name
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.acl.manager import PlainPermissionManager
from mqtools.server.broker.acl.plain_acl import masked

if TYPE_CHECKING:
    from mqtools.remoting.server import RemotingServer
    from mqtools.remoting.transport import RemotingConnection

log = logging.getLogger(__name__)


#: UPDATE_AND_CREATE_ACL_CONFIG header field -> the account attribute it sets even when empty (clears): Apache
#: sets an empty list or white address, and skips an empty secret or default permission as it skips a null one
_CLEARABLE = {"whiteRemoteAddress": "white_remote_address", "topicPerms": "topic_perms", "groupPerms": "group_perms"}


def given_fields(ext: dict[str, str]) -> frozenset[str]:
    """The clearable account attributes this header sets, empty or not."""
    return frozenset(attr for key, attr in _CLEARABLE.items() if key in ext)


class AclService:
    def __init__(self, manager: PlainPermissionManager, identity: Callable[[], tuple[str, str, str]],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.manager = manager
        #: (clusterName, brokerName, brokerAddr) for GET_BROKER_CLUSTER_ACL_INFO
        self.identity = identity
        self.refusals = LimitedLog(log, clock)

    def install(self, server: RemotingServer) -> None:
        server.access_check = self.check
        server.register(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, self.update_account)
        server.register(RequestCode.DELETE_ACL_CONFIG, self.delete_account)
        server.register(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, self.version)
        server.register(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, self.update_global_white)
        server.register(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, self.all_config)

    def check(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand | None:
        reason = self.manager.refusal(req, conn.peer)
        if reason is None:
            return None
        self.refusals.warning("acl", "refused %s from %s: %s", code_name(req.code), conn.peer, reason)
        return req.response(ResponseCode.NO_PERMISSION, reason)

    async def update_account(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        config = PlainAccessConfig.from_ext(req.ext_fields)
        try:
            await self.manager.update_account(config, given_fields(req.ext_fields))
        except (ValueError, OSError) as exc:
            return req.response(ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, str(exc))
        log.info("ACL account %s created or updated", config.access_key)
        return req.response(ResponseCode.SUCCESS)

    async def delete_account(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        access_key = req.ext_fields.get("accessKey", "")
        try:
            deleted = await self.manager.delete_account(access_key)
        except (ValueError, OSError) as exc:
            return req.response(ResponseCode.DELETE_ACL_CONFIG_FAILED, str(exc))
        if not deleted:
            return req.response(ResponseCode.DELETE_ACL_CONFIG_FAILED, f"no ACL account for accessKey={access_key}")
        log.info("ACL account %s deleted", access_key)
        return req.response(ResponseCode.SUCCESS)

    async def update_global_white(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        patterns = comma_list(req.ext_fields.get("globalWhiteAddrs"))
        try:
            await self.manager.update_global_white(patterns)
        except (ValueError, OSError) as exc:
            # RocketMQ's UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED is 211, which our table gives to
            # BROKER_NOT_EXIST (5.x); SYSTEM_ERROR with the remark is unambiguous
            return req.response(ResponseCode.SYSTEM_ERROR, str(exc))
        log.info("ACL global white addresses set to %s", patterns)
        return req.response(ResponseCode.SUCCESS)

    def version(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        cluster, name, addr = self.identity()
        version = self.manager.version.to_json().decode()
        return req.response(ResponseCode.SUCCESS, ext_fields={
            "version": version, "allAclFileVersion": orjson.dumps({str(self.manager.path): orjson.loads(version)}).decode(),
            "clusterName": cluster, "brokerName": name, "brokerAddr": addr})

    def all_config(self, _conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        acl_file = self.manager.file
        body = AclConfigBody(list(acl_file.global_white_remote_addresses), [masked(a) for a in acl_file.accounts])
        return req.response(ResponseCode.SUCCESS, body=body.to_json())
