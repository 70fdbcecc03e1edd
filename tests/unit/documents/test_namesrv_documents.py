"""The name servers' KV and configuration documents, rendered from hand-made maps (no cluster)."""

from __future__ import annotations

from support.documents import check

from mqtools.client.admin.models.configs import NamesrvConfigs, kv_list_view, kv_view, namesrv_config_view
from mqtools.common.presentation import Unreachable


def test_kv_get() -> None:
    view = kv_view("ORDER_TOPIC_CONFIG", "Orders", "broker-a:4;broker-b:4")
    doc = check(view, "kv get")
    assert view.rows == [["ORDER_TOPIC_CONFIG", "Orders", "broker-a:4;broker-b:4"]]
    assert doc["value"] == "broker-a:4;broker-b:4"


def test_kv_list_is_sorted_and_an_empty_namespace_is_an_empty_map() -> None:
    view = kv_list_view("GOLDEN", {"k1": "v1"})
    assert check(view, "kv list")["entries"] == {"k1": "v1"}
    view = kv_list_view("N", {"b": "2", "a": "1"})
    doc = check(view)
    assert view.rows == [["a", "1"], ["b", "2"]] and list(doc["entries"]) == ["a", "b"]
    empty = kv_list_view("NONE", {})
    assert check(empty)["entries"] == {} and empty.rows == []


def test_namesrv_config_one_row_per_name_server_and_key() -> None:
    view = namesrv_config_view(NamesrvConfigs({"10.0.0.1:9876": {"orderMessageEnable": "true", "listenPort": "9876"},
                                               "10.0.0.2:9876": {"listenPort": "9876"}}))
    doc = check(view, "namesrv config get")
    assert view.rows == [["10.0.0.1:9876", "listenPort", "9876"], ["10.0.0.1:9876", "orderMessageEnable", "true"],
                         ["10.0.0.2:9876", "listenPort", "9876"]]
    assert list(doc["namesrv"]["10.0.0.1:9876"]) == ["listenPort", "orderMessageEnable"]
    assert (doc["partial"], doc["unreachable"]) == (False, [])


def test_namesrv_config_of_a_name_server_that_did_not_answer_is_partial() -> None:
    read = NamesrvConfigs({"10.0.0.1:9876": {"listenPort": "9876"}},
                          [Unreachable(None, "10.0.0.2:9876", "connection refused")])
    view = namesrv_config_view(read)
    doc = check(view, "namesrv config get")
    assert (doc["partial"], list(doc["namesrv"])) == (True, ["10.0.0.1:9876"])
    assert doc["unreachable"] == [{"brokerName": None, "addr": "10.0.0.2:9876", "reason": "connection refused"}]
    assert view.notes()[-1] == "partial: could not read 10.0.0.2:9876: connection refused"
