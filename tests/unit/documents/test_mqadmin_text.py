"""The mqadmin dialect's text forms, from hand-made models (no broker): Java's conventions as a JVM prints
them (HashMap orders taken from JDK 17's), and the models as Apache's mqadmin prints them."""

from __future__ import annotations

from mqtools.client.admin.models.configs import SubscriptionGroupConfig, TopicConfig
from mqtools.client.admin.models.mqadmin_text import (
    group_config_text,
    route_json,
    route_list,
    row,
    topic_config_text,
)
from mqtools.common.javatext import (
    fastjson_pretty,
    front,
    java_bool,
    java_format,
    java_hash_map,
    java_hash_order,
    java_list,
    java_map,
    java_null,
)
from mqtools.remoting.bodies import BrokerData, QueueData, TopicRouteData

PROPS = ["UNIQ_KEY", "KEYS", "TAGS", "WAIT", "CLUSTER", "MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME", "TRACE_ON",
         "MSG_REGION"]


def test_hash_map_orders_are_the_jvms() -> None:
    # printed by JDK 17: new HashMap<>(128) of PROPS, and a default HashMap (16 buckets) of the groups
    assert java_hash_order(PROPS, 128) == ["CONSUME_START_TIME", "MSG_REGION", "UNIQ_KEY", "CLUSTER", "MIN_OFFSET",
                                           "TAGS", "KEYS", "WAIT", "TRACE_ON", "MAX_OFFSET"]
    assert java_hash_order(["CG_b", "CG_a", "OrderConsumers", "audit", "payments-svc"], 16) == [
        "audit", "CG_b", "OrderConsumers", "CG_a", "payments-svc"]
    assert java_hash_map({"KEYS": "k", "TAGS": "t"}) == "{TAGS=t, KEYS=k}"


def test_java_values() -> None:
    assert java_format("%-6s|%s", None, 3) == "null  |3"
    assert front(None, 2) == "nu" and front("broker-a", 6) == "broker"
    assert java_null(None) == "null" and java_list(None) == "null" and java_list(["Pub", "Sub"]) == "[Pub, Sub]"
    assert java_bool(" TRUE ") and not java_bool("yes") and not java_bool(None)
    assert java_map({"b": 1, "a": 2}) == "{b=1, a=2}"
    assert fastjson_pretty({"a": {0: "x"}, "b": [], "c": True}) == '{\n\t"a":{\n\t\t0:"x"\n\t},\n\t"b":[],\n\t"c":true\n}'


def test_configs_as_their_java_to_string() -> None:
    topic = TopicConfig("Orders", read_queue_nums=4, write_queue_nums=4, attributes={"message.type": "FIFO"})
    assert topic_config_text(topic) == (
        "TopicConfig [topicName=Orders, readQueueNums=4, writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, "
        "topicSysFlag=0, order=false, attributes={message.type=FIFO}]")
    text = group_config_text(SubscriptionGroupConfig("G", retry_max_times=3))
    assert text.startswith("SubscriptionGroupConfig{groupName=G, consumeEnable=true, ")
    assert "retryMaxTimes=3, groupRetryPolicy=GroupRetryPolicy{type=CUSTOMIZED," in text
    assert text.endswith("subscriptionDataSet=null, attributes={}}")


def test_route_as_topic_route_prints_it() -> None:
    route = TopicRouteData([QueueData("broker-b", 2, 2), QueueData("broker-a", 4, 4, 6)],
                           [BrokerData("C", "broker-b", {1: "h:2", 0: "h:1"}), BrokerData("C", "broker-a", {0: "h:3"}),
                            BrokerData("C", "broker-z", {0: "h:9"})])
    lines = route_list(route).splitlines()
    assert [ln.split()[:2] for ln in lines[1:3]] == [["C", "broker-a"], ["C", "broker-b"]]  # no queues: no row
    assert "{0=h:1, 1=h:2}" in lines[2] and lines[3] == "-" * 158
    assert lines[4].split() == ["Total:", "2", "6", "6"]
    doc = route_json(route)
    assert doc.index('"brokerDatas"') < doc.index('"filterServerTable"') < doc.index('"queueDatas"')
    assert '"orderTopicConf"' not in doc and "\t\t\t\t0:\"h:1\",\n\t\t\t\t1:\"h:2\"" in doc


def test_a_row_prints_an_unknown_figure_as_n_a_in_its_width() -> None:
    assert row(("%-6d", " %5.2f", " %s"), None, None, "x") == "n/a      n/a x"
    assert row(("%-6d", " %5.2f"), 3, 1.5) == "3       1.50"
