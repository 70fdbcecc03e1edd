"""The mqadmin dialect's text forms, from hand-made models (no broker): Java's conventions as a JVM prints
them (HashMap orders taken from JDK 17's), and the models as Apache's mqadmin prints them."""

from __future__ import annotations

from mqtools.client.admin.models.acl import AclConfig, AclVersion
from mqtools.client.admin.models.auth import AuthAcl, AuthPolicy, AuthRule, AuthUser
from mqtools.client.admin.models.brokers import BrokerConsumeStats, QueueLag, TopicGroupStats
from mqtools.client.admin.models.configs import (
    MessageQueue,
    PlainAccessConfig,
    SubscriptionGroupConfig,
    TopicConfig,
)
from mqtools.client.admin.models.consume_queue import BrokerQueueUnits, QueueUnit
from mqtools.client.admin.models.controller import (
    BrokerEpochs,
    BrokerSetState,
    ControllerMetadata,
    Election,
    Epoch,
    Replica,
)
from mqtools.client.admin.models.groups import ClientConnection, GroupConnections, OffsetReset
from mqtools.client.admin.models.messages import MessageTrace, MessageTrack, TraceEntry
from mqtools.client.admin.models.mqadmin_acl_text import (
    USER_LIST_ROW,
    USER_ROW,
    acl_config_lines,
    acl_lines,
    acl_version_lines,
    user_lines,
)
from mqtools.client.admin.models.mqadmin_controller_text import (
    broker_epochs_text,
    controller_metadata_text,
    election_text,
    sync_state_set_lines,
)
from mqtools.client.admin.models.mqadmin_text import (
    broker_consume_lines,
    config_lines,
    connection_lines,
    group_config_text,
    message_detail,
    pull_result_lines,
    query_cq_text,
    reset_lines,
    route_json,
    route_list,
    row,
    stats_lines,
    topic_config_text,
    topic_status_lines,
    topic_usage_lines,
    trace_lines,
)
from mqtools.client.admin.models.topics import QueueStats, TopicStatus, TopicUsage
from mqtools.client.types import PullResult, PullStatus
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
from mqtools.common.message import MessageExt
from mqtools.common.trace_data import TraceRecord, TraceType
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


def _message(**props: str) -> MessageExt:
    return MessageExt("Orders", b"hi", properties={"TAGS": "TagA", "KEYS": "k1", **props}, queue_id=1, store_size=120,
                      queue_offset=7, born_host=("10.0.0.2", 50000), store_host=("10.0.0.1", 10911),
                      msg_id="0A00000100002A9F0000000000000400", commit_log_offset=1024)


def test_a_message_as_query_msg_by_id_prints_it() -> None:
    m = _message()
    text = message_detail(m, [MessageTrack("G1", "CONSUMED"), MessageTrack("G2", "NOT_ONLINE", "gone")], "/tmp/x",
                          charset="utf-8")
    lines = text.split("\n")
    assert lines[0] == "OffsetID:            0A00000100002A9F0000000000000400"
    assert "Tags:                [TagA]" in lines and "Keys:                [k1]" in lines
    assert "Message Body Path:   /tmp/x" in lines and "Message Body:        hi" in lines
    assert text.endswith("\n\nMessageTrack [consumerGroup=G1, trackType=CONSUMED, exceptionDesc=null]\n"
                         "MessageTrack [consumerGroup=G2, trackType=NOT_ONLINE, exceptionDesc=gone]")
    # queryMsgByUniqueKey: no OffsetID line, no body, the tracks run together; no group at all is a warning
    unique = message_detail(m, [MessageTrack("G1", "CONSUMED"), MessageTrack("G2", "CONSUMED")], "/tmp/x",
                            offset_id=False)
    assert unique.startswith("Topic:") and "Message Body:" not in unique
    assert unique.endswith("exceptionDesc=null]MessageTrack [consumerGroup=G2, trackType=CONSUMED, exceptionDesc=null]")
    assert message_detail(m, [], "/tmp/x").endswith("\n\nWARN: No Consumer")


def test_a_pull_as_print_msg_prints_it() -> None:
    mq = MessageQueue("Orders", "broker-a", 1)
    found = PullResult(PullStatus.FOUND, 8, 0, 8, [_message(UNIQ_KEY="U1")])
    (line,) = pull_result_lines(found, mq, "utf-8", True)
    assert line.startswith("MSGID: U1 MessageExt [brokerName=broker-a, queueId=1, storeSize=120, queueOffset=7, ")
    assert "MIN_OFFSET=0" in line and "MAX_OFFSET=8" in line and line.endswith(" BODY: hi")
    assert pull_result_lines(found, mq, "utf-8", False)[0].endswith(" BODY: NOT PRINT BODY")
    queue = "MessageQueue [topic=Orders, brokerName=broker-a, queueId=1]"
    assert pull_result_lines(PullResult(PullStatus.NO_MATCHED_MSG, 9, 0, 9), mq, "utf-8", True) == [
        f"{queue} no matched msg. status=NO_MATCHED_MSG, offset=9"]
    assert pull_result_lines(PullResult(PullStatus.NO_NEW_MSG, 9, 0, 9), mq, "utf-8", True) == [
        f"{queue} print msg finished. status=NO_NEW_MSG, offset=9"]


def test_users_and_rules_as_mqadmin5_prints_them() -> None:
    users = [AuthUser("alice", "secret", "Super", "enable"), AuthUser("bob")]
    assert user_lines(users, USER_ROW) == [
        "#UserName        #Password              #UserType              #UserStatus           ",
        "alice            ****                   Super                  enable                ",
        "bob              null                   null                   null                  "]
    assert user_lines(users, USER_LIST_ROW)[1].startswith("alice             ****  ")
    rules = [AuthAcl("User:alice", (AuthPolicy("Custom", (AuthRule("Topic:o*", ("Pub", "Sub"), ("10.0.0.0/8",)),
                                                         AuthRule("Group:g", ("Sub",), (), "Deny"))),)),
             AuthAcl("User:bob", ())]
    lines = acl_lines(rules)
    assert len(lines) == 4 and lines[0].startswith("#Subject         #PolicyType #Resource")
    assert lines[1].split() == ["User:alice", "Custom", "Topic:o*", "[Pub,", "Sub]", "[10.0.0.0/8]", "Allow"]
    assert lines[2].split() == ["User:alice", "Custom", "Group:g", "[Sub]", "[]", "Deny"]
    assert lines[3].split() == ["User:bob"]


def test_resets_and_broker_configs_as_mqadmin_prints_them() -> None:
    rows = [OffsetReset(MessageQueue("Orders", "broker-a", 0), 3, 10), OffsetReset(MessageQueue("Orders", "b" * 40, 1),
                                                                                 None, 0)]
    assert [line.split() for line in reset_lines(rows)] == [["#brokerName", "#queueId", "#offset"],
                                                           ["broker-a", "0", "10"], ["b" * 32, "1", "0"]]
    config = {"brokerName": "broker-a", "listenPort": "10911"}
    assert config_lines("10.0.0.1:10911", config) == [
        "============10.0.0.1:10911============", "brokerName" + " " * 40 + "=  broker-a",
        "listenPort" + " " * 40 + "=  10911"]
    assert config_lines("10.0.0.2:10911", {}, "My Master: m=====Slave: s") == [
        "============My Master: m=====Slave: s============"]


def test_connections_and_stats_as_mqadmin_prints_them() -> None:
    cc = GroupConnections("G", [ClientConnection("10.0.0.9@1234", "10.0.0.9:50000", "JAVA", 407)], {"Orders": "*"},
                          "CONSUME_PASSIVELY", "CLUSTERING", None)
    lines = connection_lines(cc)
    assert lines[0].split() == ["#ClientId", "#ClientAddr", "#Language", "#Version"]
    assert lines[1].split() == ["10.0.0.9@1234", "10.0.0.9:50000", "JAVA", "V4_9_7"]
    assert lines[2:5] == ["\nBelow is subscription:", "#Topic               #SubExpression", "Orders               *"]
    assert lines[5:] == ["", "ConsumeType: CONSUME_PASSIVELY", "MessageModel: CLUSTERING", "ConsumeFromWhere: null"]
    rows = [TopicGroupStats("Orders", "G", 5, 1.5, None, 10, None), TopicGroupStats("Idle", None, None, 0.0, None, 0, None)]
    header, busy, idle = stats_lines(rows)
    assert header.split()[:3] == ["#Topic", "#Consumer", "Group"]
    assert busy.split() == ["Orders", "G", "5", "1.50", "n/a", "10", "n/a"]  # a figure not read is n/a, never 0
    assert idle.split() == ["Idle", "0", "0.00", "0", "NO_CONSUMER"]


def test_controller_answers_as_mqadmin5_prints_them() -> None:
    meta = ControllerMetadata("127.0.0.1:9878", "g1", "n0", "127.0.0.1:9878", True, {"n0": "127.0.0.1:9878"})
    assert controller_metadata_text(meta) == ("\n#ControllerGroup\tg1\n#ControllerLeaderId\tn0\n"
                                              "#ControllerLeaderAddress\t127.0.0.1:9878\n#Peer:\tn0:127.0.0.1:9878\n")
    headless = ControllerMetadata("127.0.0.1:9878", None, None, None, False, {})
    assert controller_metadata_text(headless).count("null") == 3
    state = BrokerSetState("broker-a", None, None, 2, 3, [Replica(1, "10.0.0.1:10911", True, True),
                                                          Replica(2, "10.0.0.2:10911", False, False)])
    head, first, second = sync_state_set_lines(state)
    assert head == ("\n#brokerName\tbroker-a\n#MasterBrokerId\tnull\n#MasterAddr\tnull\n#MasterEpoch\t2\n"
                    "#SyncStateSetEpoch\t3\n#SyncStateSetNums\t1")
    assert first == ("\nInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=1, "
                     "brokerAddress='10.0.0.1:10911', alive=true}")
    assert second.startswith("\nNotInSyncReplica:\t") and second.endswith("alive=false}")
    election = Election("broker-a", 2, "10.0.0.2:10911", 3, None, True)
    assert election_text("C", "broker-a", election) == (
        "\n#ClusterName\tC\n#BrokerName\tbroker-a\n#BrokerMasterAddr\t10.0.0.2:10911\n#MasterEpoch\t3\n"
        "#SyncStateSetEpoch\tnull")
    epochs = BrokerEpochs("C", "broker-a", "10.0.0.1:10911", 1, [Epoch(1, 0, 100), Epoch(2, 100, -1)], 250)
    assert broker_epochs_text(epochs).split("\n")[-3:] == [  # the open last epoch ends at the broker's max offset
        "#Epoch: EpochEntry{epoch=1, startOffset=0, endOffset=100}",
        "#Epoch: EpochEntry{epoch=2, startOffset=100, endOffset=250}", ""]


def test_topic_status_usage_and_broker_consume_stats_as_mqadmin_prints_them() -> None:
    queues = [QueueStats(MessageQueue("Orders", "broker-a", 0), 0, 5, None),
              QueueStats(MessageQueue("Orders", "broker-b", 0), 2, 9, None, "slave")]
    lines = topic_status_lines(TopicStatus("Orders", queues, None))
    assert [line.split() for line in lines[1:3]] == [["broker-a", "0", "0", "5"], ["broker-b", "0", "2", "9"]]
    assert lines[-2:] == ["", "Topic Put TPS: n/a"]  # no master's stats read: not 0
    assert topic_status_lines(TopicStatus("Orders", [], 2))[-1] == "Topic Put TPS: 2.0"
    usage = topic_usage_lines([TopicUsage("Orders", ["C1", "C2"], ["G1", "G2"]), TopicUsage("Idle", ["C1"], None)])
    assert [line.split() for line in usage] == [["#Cluster", "Name", "#Topic", "#Consumer", "Group"],
                                                ["C1,C2", "Orders", "G1"], ["C1,C2", "Orders", "G2"], ["C1", "Idle"]]
    lags = [QueueLag("G", MessageQueue("Orders", "broker-a", 0), 10, 4, 1_700_000_000_000),
            QueueLag("G", MessageQueue("Orders", "broker-a", 1), 10, 9, 1_700_000_000_000),
            QueueLag("G", MessageQueue("Orders", "broker-a", 2), 10, 0, None)]
    out = broker_consume_lines(BrokerConsumeStats("10.0.0.1:10911", 17, lags), 2)
    assert len(out) == 3 and out[1].split()[:7] == ["Orders", "G", "broker-a", "0", "10", "4", "6"]
    assert out[-1] == "\nDiff Total: 17"  # below -l, or never consumed: not listed, still in the total


def test_acl1_config_and_versions_as_mqadmin4_prints_them() -> None:
    account = PlainAccessConfig("RocketMQ", "12345678", "192.168.0.*", True, "DENY", "SUB",
                                ["Orders=PUB"], ["G=SUB"])
    lines = acl_config_lines(AclConfig("10.0.0.1:10911", ["10.10.*"], [account]))
    assert lines[:4] == ["", "globalWhiteRemoteAddresses: [10.10.*]", "", "accounts:"]
    assert lines[4:6] == ["  accessKey         : RocketMQ", "  secretKey         : ****"]  # never the secret
    assert "  admin             : true" in lines and "  topicPerms        : [Orders=PUB]" in lines
    versions = [AclVersion("C", "broker-a", "10.0.0.1:10911", None, None)]
    out = acl_version_lines(versions, of_cluster=True)
    assert out[1].split()[-3:] == ["plain_acl.yml", "n/a", "n/a"]  # a version not read is not 0
    assert out[-1] == "get cluster's plain access config version success."
    assert acl_version_lines([], of_cluster=False)[-1] == "get broker's plain access config version success."


def test_a_trace_as_query_msg_trace_by_id_prints_it() -> None:
    def entry(kind: TraceType, group: str, success: bool = True) -> TraceEntry:
        return TraceEntry(TraceRecord(kind, "M1", None, group=group, cost_ms=3, success=success), "10.0.0.9")

    trace = MessageTrace("M1", "RMQ_SYS_TRACE_TOPIC", [entry(TraceType.Pub, "P"), entry(TraceType.SubBefore, "G1"),
                                                       entry(TraceType.SubAfter, "G1"),
                                                       entry(TraceType.SubAfter, "G2", False)])
    lines = trace_lines(trace)
    assert lines[0].split() == ["#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"]
    assert lines[1].split()[:3] == ["Pub", "P", "10.0.0.9"] and lines[1].split()[-2:] == ["3ms", "success"]
    assert lines[2] == "" and [line.split()[1] for line in lines if line.startswith("#Type")][1:] == [
        "#ConsumerGroup", "#ConsumerGroup"]  # one header per group; SubBefore records are not printed
    assert sum(line.startswith("Sub ") for line in lines) == 2 and lines[-2].split()[-1] in ("success", "failed")


def test_query_cq_prints_the_subscription_bounds_and_each_unit_as_mqadmin() -> None:
    found = BrokerQueueUnits("broker-a", "10.0.0.1:10911", 0, 12, [QueueUnit(3, 1024, 190, 77), QueueUnit(4, 1214, 190, 0)],
                             subscription="TagA", filter_data="null",
                             subscription_json={"classFilterMode": False, "codeSet": [], "expressionType": "TAG",
                                                "subString": "TagA", "subVersion": 1, "tagsSet": ["TagA"],
                                                "topic": "T"})
    rule = "=" * 38
    assert query_cq_text(found).split("\n") == [
        "Subscription data: ", "{", '\t"classFilterMode":false,', '\t"codeSet":[],', '\t"expressionType":"TAG",',
        '\t"subString":"TagA",', '\t"subVersion":1,', '\t"tagsSet":[', '\t\t"TagA"', "\t],", '\t"topic":"T"', "}", rule,
        "Filter data: ", "null", rule, "Queue data: ", "max: 12, min: 0", rule,
        "idx: 3", ("ConsumeQueueData{physicOffset=1024, physicSize=190, tagsCode=77, extendDataJson='null', "
        "bitMap='null', eval=false, msg='null'}"), rule,
        "idx: 4", ("ConsumeQueueData{physicOffset=1214, physicSize=190, tagsCode=0, extendDataJson='null', "
        "bitMap='null', eval=false, msg='null'}"), rule, ""]
    bare = BrokerQueueUnits("broker-a", "10.0.0.1:10911", 5, 6, [])
    assert query_cq_text(bare) == f"Queue data: \nmax: 6, min: 5\n{rule}\n"
