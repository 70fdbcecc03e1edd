"""ACL 1.0 administration (mqadmin's updateAclConfig, deleteAclConfig, updateGlobalWhiteAddr,
getAclConfig, clusterAclConfigVersion): one broker, or a cluster. As mqadmin's `-c`, changes go to every
broker, masters and slaves (each keeps its own plain_acl.yml); reads ask each broker set's master, else a
slave (mqadmin asks the masters and leaves a master-less set out in silence; here it is read, or named).

RocketMQ 5.3 removed ACL 1.0 for ACL 2.0's users and rules: Apache 5.5.0's brokers answer every one of these
codes REQUEST_CODE_NOT_SUPPORTED (and its mqadmin has none of these commands), which is said as that, not as
an unknown request code."""

from __future__ import annotations

import dataclasses

import orjson

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.acl import AclConfig, AclVersion
from mqtools.client.admin.models.auth import AuthRead
from mqtools.client.errors import NotAvailable
from mqtools.remoting.bodies import AclConfigBody, PlainAccessConfig
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand


class AclAdmin(AdminService):
    async def _call(self, broker_addr: str, code: int, ext: dict[str, str] | None = None) -> RemotingCommand:
        """One ACL 1.0 request; a broker without ACL 1.0 (RocketMQ 5.3 and later) raises NotAvailable saying so."""
        try:
            return await self.admin.call(broker_addr, code, ext)
        except NotAvailable as exc:
            raise NotAvailable(exc.code, f"{broker_addr} has no ACL 1.0 (plain_acl.yml): RocketMQ 5.3 and later "
                                         "replaced it with ACL 2.0's users and ACL rules") from exc

    async def acl_config(self, broker_addr: str) -> AclConfig:
        resp = await self._call(broker_addr, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
        body = AclConfigBody.from_json(resp.body or b"{}")
        return AclConfig(broker_addr, body.global_white_addrs,
                         [dataclasses.replace(a, secret_key=None) for a in body.plain_access_configs])

    async def acl_configs(self, cluster: str | None = None, broker_addr: str | None = None) -> AuthRead:
        """The ACL config of one broker, or of each broker set of a cluster."""
        return AuthRead(*await self.admin.read_brokers(cluster, broker_addr, self.acl_config))

    async def acl_version(self, broker_addr: str) -> AclVersion:
        ext = (await self._call(broker_addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)).ext_fields
        try:
            version = orjson.loads(ext.get("version") or "{}")
        except orjson.JSONDecodeError:
            version = {}
        return AclVersion(ext.get("clusterName", ""), ext.get("brokerName", ""), ext.get("brokerAddr", broker_addr),
                          version.get("counter"), version.get("timestamp"))

    async def acl_versions(self, cluster: str | None = None, broker_addr: str | None = None) -> AuthRead:
        return AuthRead(*await self.admin.read_brokers(cluster, broker_addr, self.acl_version))

    async def update_acl_account(self, account: PlainAccessConfig, *, cluster: str | None = None,
                                 broker_addr: str | None = None) -> list[str]:
        addrs = await self.admin.every_broker(cluster, broker_addr)
        ext = account.to_ext()
        await self.admin._each(addrs, lambda a: self._call(a, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, ext))
        return addrs

    async def delete_acl_account(self, access_key: str, *, cluster: str | None = None,
                                 broker_addr: str | None = None) -> list[str]:
        addrs = await self.admin.every_broker(cluster, broker_addr)
        ext = {"accessKey": access_key}
        await self.admin._each(addrs, lambda a: self._call(a, RequestCode.DELETE_ACL_CONFIG, ext))
        return addrs

    async def update_global_white_addrs(self, addrs_patterns: list[str], *, cluster: str | None = None,
                                        broker_addr: str | None = None) -> list[str]:
        addrs = await self.admin.every_broker(cluster, broker_addr)
        ext = {"globalWhiteAddrs": ",".join(addrs_patterns), "aclFileFullPath": ""}
        await self.admin._each(addrs, lambda a: self._call(a, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ext))
        return addrs
