"""Name-server-side operations: KV config, broker write permission and the name servers' own
configuration, sent to every name server."""

from __future__ import annotations

from mqtools.client.admin.base import AdminService, reason_of
from mqtools.client.admin.models.configs import NamesrvConfigs, WritePermChange
from mqtools.client.errors import MQClientError, UnreachableError, broker_error
from mqtools.common.javaprops import parse_properties, render_properties
from mqtools.common.presentation import Unreachable
from mqtools.remoting.bodies import KVTable
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import (
    BrokerNameRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    KVConfigRequestHeader,
)


class NamesrvAdmin(AdminService):
    """Name-server-side operations: KV config, write permission and configuration, on every name server."""

    async def put_kv(self, namespace: str, key: str, value: str) -> None:
        await self.admin._each_namesrv(RequestCode.PUT_KV_CONFIG, KVConfigRequestHeader(namespace, key, value).to_ext())

    async def get_kv(self, namespace: str, key: str) -> str | None:
        resp = await self.admin.call(None, RequestCode.GET_KV_CONFIG, KVConfigRequestHeader(namespace, key).to_ext(),
                               ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND))
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return GetKVConfigResponseHeader.from_ext(resp.ext_fields).value

    async def delete_kv(self, namespace: str, key: str) -> None:
        await self.admin._each_namesrv(RequestCode.DELETE_KV_CONFIG, KVConfigRequestHeader(namespace, key).to_ext())

    async def kv_list(self, namespace: str) -> dict[str, str]:
        resp = await self.admin.call(None, RequestCode.GET_KVLIST_BY_NAMESPACE,
                               GetKVListByNamespaceRequestHeader(namespace).to_ext(),
                               ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND))
        return KVTable.from_json(resp.body).table if resp.body else {}

    async def wipe_write_perm(self, broker_name: str) -> WritePermChange:
        """Take write permission from a broker on every name server: topics changed per name server that applied
        it, and the ones that did not (raises when none did)."""
        return await self._perm(RequestCode.WIPE_WRITE_PERM_OF_BROKER, broker_name, "wipeTopicCount")

    async def add_write_perm(self, broker_name: str) -> WritePermChange:
        """Give write permission back on every name server (the inverse of wipe_write_perm)."""
        return await self._perm(RequestCode.ADD_WRITE_PERM_OF_BROKER, broker_name, "addTopicCount")

    async def _perm(self, code: int, broker_name: str, count_key: str) -> WritePermChange:
        writes = await self.admin._namesrv_writes(code, BrokerNameRequestHeader(broker_name).to_ext())
        if not writes.applied:
            raise writes.error()
        return WritePermChange(broker_name, {addr: int(resp.ext_fields.get(count_key, 0))
                                             for addr, resp in writes.applied.items()}, writes.failed)

    async def namesrv_config(self) -> NamesrvConfigs:
        """GET_NAMESRV_CONFIG from every name server: address -> its configuration, in its own order, and the
        name servers that did not answer (the first one's error when none did; a refusal raises)."""
        results = await self.admin.instance.invoke_each_namesrv(
            lambda: RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG, {}))
        configs: dict[str, dict[str, str]] = {}
        unreachable: list[Unreachable] = []
        for addr, resp in results.items():
            if isinstance(resp, UnreachableError):
                unreachable.append(Unreachable(None, addr, reason_of(resp)))
            elif isinstance(resp, MQClientError):
                raise resp
            elif resp.code != ResponseCode.SUCCESS:
                raise broker_error(resp.code, resp.remark)
            else:
                configs[addr] = parse_properties((resp.body or b"").decode("utf-8"))
        if not configs and unreachable:
            raise UnreachableError("no name server answered: " + "; ".join(str(u) for u in unreachable))
        return NamesrvConfigs(configs, unreachable)

    async def update_namesrv_config(self, values: dict[str, str]) -> list[str]:
        """UPDATE_NAMESRV_CONFIG on every name server (applied live); the addresses changed."""
        if not values:
            raise MQClientError("nothing to update")
        body = render_properties(values).encode("utf-8")
        return list(await self.admin._each_namesrv(RequestCode.UPDATE_NAMESRV_CONFIG, {}, body))
