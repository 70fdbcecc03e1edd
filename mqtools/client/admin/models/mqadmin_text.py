"""The models as Apache's mqadmin prints them (its printf patterns and Java's toString), for the mqadmin
dialect of `mq admin`: clusterList, consumerProgress, haStatus, topicRoute, TopicConfig, SubscriptionGroupConfig,
getBrokerConfig, resetOffsetByTime, MessageQueue, MessageExt (queryMsgBy*, printMsg, consumeMessage),
MessageTrack, queryCq's consume-queue units. Scripts that cut mqadmin's output keep working on mq's."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mqtools.common.javatext import (
    fastjson_pretty,
    front,
    java_format,
    java_hash_map,
    java_hash_order,
    java_map,
    java_null,
    java_time,
)
from mqtools.common.mqversion import version_desc
from mqtools.common.perm import perm_to_string
from mqtools.common.presentation import NA

if TYPE_CHECKING:
    from mqtools.client.admin.models.brokers import (
        BrokerConsumeStats,
        BrokerRow,
        ClusterSnapshot,
        TopicGroupStats,
    )
    from mqtools.client.admin.models.configs import (
        MessageQueue,
        SubscriptionGroupConfig,
        TopicConfig,
        TopicRouteData,
    )
    from mqtools.client.admin.models.consume_queue import BrokerQueueUnits
    from mqtools.client.admin.models.groups import (
        ConsumerProgress,
        GroupConnections,
        GroupSummary,
        OffsetReset,
    )
    from mqtools.client.admin.models.ha import HAStatus
    from mqtools.client.admin.models.messages import MessageTrace, MessageTrack, TraceEntry
    from mqtools.client.admin.models.topics import TopicStatus, TopicUsage
    from mqtools.client.types import PullResult
    from mqtools.common.message import MessageExt

HEADER = "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %-11s  %-12s  %-8s  %-10s"
ROW = "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %11s  %-12s  %-8s  %10s"
MORE = "%-16s  %-32s %14s %14s %14s %14s"
PROGRESS_HEADER = "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s%s"
PROGRESS_ROW = ("%-64s", "  %-32s", "  %-4d", "  %-20d", "  %-20d", "  %-20d", " %-20d", " %s")
PROGRESS_IP_HEADER = "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s %-20s%s"
PROGRESS_IP_ROW = ("%-64s", "  %-32s", "  %-4d", "  %-20d", "  %-20d", "  %-20s", " %-20d", " %-20d", " %s")
GROUPS_HEADER = "%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s"
GROUPS_ROW = ("%-64s", "  %-6d", "  %-24s", " %-5s", "  %-14s", "  %-7d", "  %d")
SLAVE_HEADER = "%-32s  %-16s %16s %16s %16s %16s"
SLAVE_ROW = "%-32s  %-16d %16d %16.2f %16s %16d"
ROUTE_LIST = "%-45s %-32s %-50s %-10s %-11s %-5s"
DEFAULT_RETRY_POLICY = "GroupRetryPolicy{type=CUSTOMIZED, exponentialRetryPolicy=null, customizedRetryPolicy=null}"
"""What RocketMQ 5 prints for the retry policy of a group created without one (mq cannot set another)."""


def _num(value: float | None, fmt: str) -> str:
    return NA if value is None else fmt % value


def _row(b: BrokerRow, now_ms: int) -> str:
    r = b.runtime
    if r is None:
        return java_format(ROW, b.cluster, b.broker_name, b.broker_id, b.addr, NA, NA, NA, NA, NA, NA, NA, NA)
    raw = r.raw
    in_tps = f"{_num(r.put_tps, '%9.2f')}({raw.get('sendThreadPoolQueueSize', NA)},{raw.get('sendThreadPoolQueueHeadWaitTimeMills', NA)}ms)"
    out_tps = (f"{_num(r.get_transferred_tps, '%9.2f')}({raw.get('pullThreadPoolQueueSize', NA)},"
               f"{raw.get('pullThreadPoolQueueHeadWaitTimeMills', NA)}ms|{raw.get('ackThreadPoolQueueSize', 'N')},"
               f"{raw.get('ackThreadPoolQueueHeadWaitTimeMills', 'N')}ms)")
    timer = NA
    if "timerReadBehind" in raw:
        congest = float(raw.get("timerCongestNum", 0)) / 10000
        timer = (f"{raw['timerReadBehind']}-{raw.get('timerOffsetBehind', NA)}({congest:.1f}w, "
                 f"{raw.get('timerEnqueueTps', NA)}, {raw.get('timerDequeueTps', NA)})")
    hours = None if r.earliest_message_ms is None else (now_ms - r.earliest_message_ms) / 3_600_000
    activated = NA if r.broker_active is None else str(r.broker_active).lower()
    return java_format(ROW, b.cluster, b.broker_name, b.broker_id, b.addr, r.version_desc or NA, in_tps, out_tps,
                       timer, raw.get("pageCacheLockTimeMills", NA), _num(hours, "%2.2f"),
                       _num(r.commitlog_disk_ratio, "%.4f"), activated)


def _more_row(b: BrokerRow) -> str:
    r = b.runtime

    def diff(a: int | None, c: int | None) -> str:
        return NA if a is None or c is None else str(a - c)

    if r is None:
        return MORE % (b.cluster, b.broker_name, NA, NA, NA, NA)
    return MORE % (b.cluster, b.broker_name,
                   diff(r.put_total_today_morning, r.put_total_yesterday_morning),
                   diff(r.get_total_today_morning, r.get_total_yesterday_morning),
                   diff(r.put_total_today_now, r.put_total_today_morning),
                   diff(r.get_total_today_now, r.get_total_today_morning))


def cluster_list_text(snap: ClusterSnapshot, cluster: str | None, more: bool, now_ms: int) -> str:
    rows = [b for b in snap.brokers if cluster is None or b.cluster == cluster]
    if more:
        lines = [MORE % ("#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday",
                         "#OutTotalToday")]
        lines += [_more_row(b) for b in rows]
    else:
        lines = [HEADER % ("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
                           "#OutTPS(LOAD)", "#Timer(Progress)", "#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED")]
        lines += [_row(b, now_ms) for b in rows]
    return "\n".join(lines)


def row(specs: tuple[str, ...], *values: Any) -> str:
    """One printf row, spec by spec: an unknown value (None) prints n/a in the same width."""
    return "".join(re.sub(r"%(-?\d*)(?:\.\d+)?[df]", r"%\1s", spec) % NA if v is None else java_format(spec, v)
                   for spec, v in zip(specs, values, strict=True))


def last_time(ms: int | None) -> str:
    """yyyy-MM-dd HH:mm:ss, local time; N/A when the group consumed nothing (mqadmin's words)."""
    return "N/A" if not ms else java_time(ms, millis=False)


def progress_text(p: ConsumerProgress, client_ips: dict[Any, str] | None) -> list[str]:
    if client_ips is None:
        lines = [PROGRESS_HEADER % ("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff",
                                    "#Inflight", "#LastTime")]
    else:
        lines = [PROGRESS_IP_HEADER % ("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset",
                                       "#Client IP", "#Diff", "#Inflight", "#LastTime")]
    for q in p.queues:
        head = (front(q.queue.topic, 64), front(q.queue.broker_name, 32), q.queue.queue_id, q.broker_offset,
                q.consumer_offset)
        tail = (q.diff, q.inflight, last_time(q.last_timestamp_ms))
        if client_ips is None:
            lines.append(row(PROGRESS_ROW, *head, *tail))
        else:
            lines.append(row(PROGRESS_IP_ROW, *head, client_ips.get(q.queue, "N/A"), *tail))
    inflight = [q.inflight for q in p.queues]
    total = NA if None in inflight else str(sum(i for i in inflight if i is not None))
    tps = NA if p.consume_tps is None else f"{p.consume_tps:.2f}"
    return [*lines, "", f"Consume TPS: {tps}", f"Consume Diff Total: {p.total_diff}",
            f"Consume Inflight Total: {total}"]


def groups_text(summaries: list[GroupSummary]) -> list[str]:
    lines = [GROUPS_HEADER % ("#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total")]
    for s in summaries:
        version = s.version_desc if s.online else ("OFFLINE" if s.online == 0 else None)
        model = s.message_model if s.pull_or_push == "PUSH" else ""
        tps = None if s.consume_tps is None else int(s.consume_tps)
        lines.append(row(GROUPS_ROW, front(s.group, 64), s.online, version, s.pull_or_push or "", model or "", tps,
                         s.diff_total))
    return lines


def ha_status_text(addr: str, status: HAStatus) -> str:
    """One broker's block, as HAStatusSubCommand prints it: it starts with an empty line."""
    if status.is_master:
        max_offset = status.commitlog_max_offset or 0
        lines = ["", f"#MasterAddr\t{addr}", f"#MasterCommitLogMaxOffset\t{max_offset}",
                 f"#SlaveNum\t{len(status.slaves)}", f"#InSyncSlaveNum\t{status.in_sync_slaves or 0}",
                 SLAVE_HEADER % ("#SlaveAddr", "#SlaveAckOffset", "#Diff", "#TransferSpeed(KB/s)", "#Status",
                                 "#TransferFromWhere")]
        for c in status.slaves:
            ack = -1 if c.ack_offset is None else c.ack_offset
            diff = c.diff_bytes if c.diff_bytes is not None else max_offset
            lines.append(java_format(SLAVE_ROW, c.addr, ack, diff, (c.transfer_bytes_per_s or 0) / 1024.0,
                                     "OK" if c.in_sync else "Fall Behind", c.transfer_from or 0))
        return "\n".join(lines)
    client = status.client
    return "\n".join([
        "", java_format("#MasterAddr\t%s", client.master_addr if client else None),
        f"#CommitLogMaxOffset\t{(client.max_offset if client else None) or 0}",
        f"#TransferSpeed(KB/s)\t{((client.transfer_bytes_per_s if client else None) or 0) / 1024.0:.2f}",
        f"#LastReadTime\t{java_time((client.last_read_ms if client else None) or 0)}",
        f"#LastWriteTime\t{java_time((client.last_write_ms if client else None) or 0)}",
        f"#MasterFlushOffset\t{(client.master_flush_offset if client else None) or 0}",
    ])


def topic_config_text(config: TopicConfig) -> str:
    """TopicConfig.toString of RocketMQ 5."""
    return (f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
            f"writeQueueNums={config.write_queue_nums}, perm={perm_to_string(config.perm)}, "
            f"topicFilterType={config.topic_filter_type}, topicSysFlag={config.topic_sys_flag}, "
            f"order={str(config.order).lower()}, attributes={java_map(config.attributes)}]")


def route_json(route: TopicRouteData) -> str:
    """TopicRouteData as mqadmin's topicRoute prints it: fields sorted, null fields left out."""
    doc: dict[str, Any] = {
        "brokerDatas": [{"brokerAddrs": dict(sorted(b.broker_addrs.items())), "brokerName": b.broker_name,
                         "cluster": b.cluster, "enableActingMaster": False} for b in route.broker_datas],
        "filterServerTable": route.filter_server_table,
    }
    if route.order_topic_conf:
        doc["orderTopicConf"] = route.order_topic_conf
    doc["queueDatas"] = [{"brokerName": q.broker_name, "perm": q.perm, "readQueueNums": q.read_queue_nums,
                          "topicSysFlag": q.topic_sys_flag, "writeQueueNums": q.write_queue_nums}
                         for q in route.queue_datas]
    return fastjson_pretty(doc)


def route_list(route: TopicRouteData) -> str:
    """topicRoute -l: one row per broker by name, a rule of 158 dashes, the totals."""
    queues = {q.broker_name: q for q in route.queue_datas}
    lines = [ROUTE_LIST % ("#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")]
    for b in sorted(route.broker_datas, key=lambda b: b.broker_name):
        q = queues.get(b.broker_name)
        if q is None:
            continue  # a broker without queue data serves none of the topic's queues
        lines.append(java_format(ROUTE_LIST, b.cluster, b.broker_name, java_map(dict(sorted(b.broker_addrs.items()))),
                                 q.read_queue_nums, q.write_queue_nums, q.perm))
    lines.append("-" * 158)
    lines.append(java_format(ROUTE_LIST, "Total:", len(queues), "", sum(q.read_queue_nums for q in queues.values()),
                             sum(q.write_queue_nums for q in queues.values()), ""))
    return "\n".join(lines)


def group_config_text(c: SubscriptionGroupConfig) -> str:
    """SubscriptionGroupConfig.toString of RocketMQ 5 (Guava's toStringHelper)."""
    def b(v: bool) -> str:
        return str(v).lower()

    return (f"SubscriptionGroupConfig{{groupName={c.group_name}, consumeEnable={b(c.consume_enable)}, "
            f"consumeFromMinEnable={b(c.consume_from_min_enable)}, "
            f"consumeBroadcastEnable={b(c.consume_broadcast_enable)}, "
            f"consumeMessageOrderly={b(c.consume_message_orderly)}, retryQueueNums={c.retry_queue_nums}, "
            f"retryMaxTimes={c.retry_max_times}, groupRetryPolicy={DEFAULT_RETRY_POLICY}, brokerId={c.broker_id}, "
            f"whichBrokerWhenConsumeSlowly={c.which_broker_when_consume_slowly}, "
            f"notifyConsumerIdsChangedEnable={b(c.notify_consumer_ids_changed_enable)}, "
            f"groupSysFlag={c.group_sys_flag}, consumeTimeoutMinute={c.consume_timeout_minute}, "
            f"subscriptionDataSet=null, attributes={java_map(c.attributes)}}}")


def java_queue(mq: MessageQueue) -> str:
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def java_message(m: MessageExt, broker_name: str | None) -> str:
    """MessageExt.toString, with Message.toString inside."""
    signed = ", ".join(str(b - 256 if b > 127 else b) for b in m.body)
    inner = (f"Message{{topic='{m.topic}', flag={m.flag}, properties={java_hash_map(m.properties)}, body=[{signed}], "
             f"transactionId='null'}}")
    return (f"MessageExt [brokerName={broker_name}, queueId={m.queue_id}, storeSize={m.store_size}, "
            f"queueOffset={m.queue_offset}, sysFlag={m.sys_flag}, bornTimestamp={m.born_timestamp}, "
            f"bornHost=/{m.born_host[0]}:{m.born_host[1]}, storeTimestamp={m.store_timestamp}, "
            f"storeHost=/{m.store_host[0]}:{m.store_host[1]}, msgId={m.msg_id}, commitLogOffset={m.commit_log_offset}, "
            f"bodyCRC={m.body_crc}, reconsumeTimes={m.reconsume_times}, "
            f"preparedTransactionOffset={m.prepared_transaction_offset}, toString()={inner}]")


def java_track(t: MessageTrack) -> str:
    return f"MessageTrack [consumerGroup={t.group}, trackType={t.track_type}, exceptionDesc={java_null(t.exception_desc)}]"


RESET_HEADER = "%-40s  %-40s  %-40s"
RESET_ROW = "%-40s  %-40d  %-40d"


def reset_lines(rows: list[OffsetReset]) -> list[str]:
    """resetOffsetByTime's table: each queue's new offset."""
    lines = [RESET_HEADER % ("#brokerName", "#queueId", "#offset")]
    return lines + [RESET_ROW % (front(r.queue.broker_name, 32), r.queue.queue_id, r.new) for r in rows]


def config_lines(addr: str, config: dict[str, str], title: str | None = None) -> list[str]:
    """getNamesrvConfig, getControllerConfig and getBrokerConfig for one server: a `====addr====` title line
    (getBrokerConfig's name the master and slave), then `key =  value` per property."""
    return [f"============{title or addr}============", *(java_format("%-50s=  %s", k, v) for k, v in config.items())]


def with_pull_offsets(m: MessageExt, result: PullResult) -> MessageExt:
    """What a Java pull consumer adds to each message it returns: the queue's MIN_OFFSET and MAX_OFFSET."""
    return replace(m, properties={**m.properties, "MIN_OFFSET": str(result.min_offset),
                                  "MAX_OFFSET": str(result.max_offset)})


def message_detail(m: MessageExt, tracks: list[MessageTrack], body_path: str, *, offset_id: bool = True,
                   charset: str | None = None) -> str:
    """queryMsgById's print (§3.13): one `%-20s %s` line per field, the body file's path, then each group's track;
    queryMsgByUniqueKey's without the OffsetID line and with its tracks run together."""
    lines = [java_format("%-20s %s", "OffsetID:", m.msg_id)] if offset_id else []
    fields: list[tuple[str, object]] = [
        ("Topic:", m.topic), ("Tags:", f"[{java_null(m.tags)}]"), ("Keys:", f"[{java_null(m.properties.get('KEYS'))}]"),
        ("Queue ID:", m.queue_id), ("Queue Offset:", m.queue_offset), ("CommitLog Offset:", m.commit_log_offset),
        ("Reconsume Times:", m.reconsume_times), ("Born Timestamp:", java_time(m.born_timestamp)),
        ("Store Timestamp:", java_time(m.store_timestamp)), ("Born Host:", f"{m.born_host[0]}:{m.born_host[1]}"),
        ("Store Host:", f"{m.store_host[0]}:{m.store_host[1]}"), ("System Flag:", m.sys_flag),
        ("Properties:", java_hash_map(m.properties)), ("Message Body Path:", body_path)]
    if charset is not None:
        fields.append(("Message Body:", m.body.decode(charset, errors="replace")))
    lines += [java_format("%-20s %s", name, value) for name, value in fields]
    text = "\n".join(lines) + "\n"
    if not tracks:
        return text + "\n\nWARN: No Consumer"
    return text + "\n\n" + ("\n" if offset_id else "").join(java_track(t) for t in tracks)


def pull_result_lines(result: PullResult, mq: MessageQueue, charset: str, print_body: bool) -> list[str]:
    """One pull answer as printMsg and consumeMessage print it: `MSGID: <id> <MessageExt> BODY: <body>` per message
    of a FOUND (PrintMessageSubCommand.printMessage), one line for anything else."""
    from mqtools.client.types import message_id

    status, offset = result.status.value, result.next_begin_offset
    if status == "FOUND":
        return [f"MSGID: {message_id(m)} {java_message(with_pull_offsets(m, result), mq.broker_name)} BODY: "
                + (m.body.decode(charset, errors="replace") if print_body else "NOT PRINT BODY")
                for m in result.messages]
    if status == "NO_MATCHED_MSG":
        return [f"{java_queue(mq)} no matched msg. status={status}, offset={offset}"]
    return [f"{java_queue(mq)} print msg finished. status={status}, offset={offset}"]


CONNECTION_ROW = "%-36s %-22s %-10s %s"
SUBSCRIPTION_ROW = "%-20s %s"
STATS_HEADER = "%-64s  %-64s %12s %11s %11s %14s %14s"
STATS_ROW = ("%-64s", "  %-64s", " %12d", " %11.2f", " %11.2f", " %14d", " %14d")
STATS_IDLE = ("%-64s", "  %-64s", " %12d", " %11.2f", " %11s", " %14d", " %14s")


def connection_lines(cc: GroupConnections) -> list[str]:
    """consumerConnection: each client, the group's subscription, then its consume type, model and start."""
    lines = [CONNECTION_ROW % ("#ClientId", "#ClientAddr", "#Language", "#Version")]
    lines += [CONNECTION_ROW % (c.client_id, c.client_addr, c.language, version_desc(c.version))
              for c in cc.connections]
    lines += ["\nBelow is subscription:", SUBSCRIPTION_ROW % ("#Topic", "#SubExpression")]
    lines += [java_format(SUBSCRIPTION_ROW, topic, expression) for topic, expression in cc.subscriptions.items()]
    lines.append("")
    return lines + [java_format(f"{label}: %s", value) for label, value in (
        ("ConsumeType", cc.consume_type), ("MessageModel", cc.message_model),
        ("ConsumeFromWhere", cc.consume_from_where))]


def stats_lines(rows: list[TopicGroupStats]) -> list[str]:
    """statsAll: a line per topic and group; a topic no group consumes says NO_CONSUMER. A sum that leaves a set
    out is n/a, as one over a master that did not answer: mqadmin's row has no room to say "at least", and the
    other sets' sum must not pass as the total."""
    lines = [STATS_HEADER % ("#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour",
                             "#OutMsg24Hour")]
    for r in rows:
        in_tps, out_tps, in_24h, out_24h = ((None,) * 4 if r.sums_partial
                                            else (r.in_tps, r.out_tps, r.in_24h, r.out_24h))
        if r.group is None:
            lines.append(row(STATS_IDLE, front(r.topic, 64), "", 0, in_tps, "", in_24h, "NO_CONSUMER"))
        else:
            lines.append(row(STATS_ROW, front(r.topic, 64), front(r.group, 64),
                             None if r.backlog_partial else r.accumulation, in_tps, out_tps, in_24h, out_24h))
    return lines


TOPIC_STATUS_HEADER = "%-32s  %-4s  %-20s  %-20s    %s"
TOPIC_STATUS_ROW = "%-32s  %-4d  %-20d  %-20d    %s"
USAGE_HEADER = "%-20s  %-48s  %-48s"
USAGE_ROW = "%-20s  %-64s  %-64s"
CONSUME_HEADER = "%-64s  %-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s"
CONSUME_ROW = "%-64s  %-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s"


def topic_status_lines(status: TopicStatus) -> list[str]:
    """topicStatus: each queue's offsets and last update, then the topic's put TPS (n/a when not read)."""
    lines = [TOPIC_STATUS_HEADER % ("#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated")]
    lines += [TOPIC_STATUS_ROW % (front(q.queue.broker_name, 32), q.queue.queue_id, q.min_offset, q.max_offset,
                                  java_time(q.last_update_ms) if q.last_update_ms else "") for q in status.queues]
    tps = NA if status.put_tps is None else repr(float(status.put_tps))
    return [*lines, "", f"Topic Put TPS: {tps}"]


def topic_usage_lines(usages: list[TopicUsage]) -> list[str]:
    """topicList -c: a line per topic and consuming group, with the topic's clusters."""
    lines = [USAGE_HEADER % ("#Cluster Name", "#Topic", "#Consumer Group")]
    return lines + [USAGE_ROW % (front(",".join(u.clusters), 20), front(u.topic, 64), front(group, 64))
                    for u in usages for group in u.groups or [""]]


def broker_consume_lines(stats: BrokerConsumeStats, level: int) -> list[str]:
    """brokerConsumeStats: the queues whose lag is at least `level` and that were consumed, then the total."""
    lines = [java_format(CONSUME_HEADER, "#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset",
                         "#Consumer Offset", "#Diff", "#LastTime")]
    lines += [java_format(CONSUME_ROW, front(q.queue.topic, 64), q.group, front(q.queue.broker_name, 32),
                          q.queue.queue_id, q.broker_offset, q.consumer_offset, q.diff,
                          java_time(q.last_timestamp_ms, millis=False))
              for q in stats.queues if q.diff >= level and q.last_timestamp_ms is not None]
    return [*lines, f"\nDiff Total: {stats.total_diff}"]


TRACE_ROW = "%-10s %-20s %-20s %-20s %-10s %-10s"


def _trace_row(kind: str, entry: TraceEntry) -> str:
    r = entry.record
    stamp = datetime.fromtimestamp((r.timestamp or 0) / 1000).strftime("%Y-%m-%d %H:%M:%S")
    return java_format(TRACE_ROW, kind, r.group, entry.client_host, stamp, f"{r.cost_ms}ms",
                       "success" if r.success else "failed")


def trace_lines(trace: MessageTrace) -> list[str]:
    """queryMsgTraceById as mqadmin 4.9 prints it: each send's row, then each consumer group's deliveries
    (SubAfter records) under a header of their own, groups in a Java HashMap's order."""
    lines: list[str] = []
    consumers: dict[str, list[TraceEntry]] = {}
    for entry in trace.entries:
        kind = entry.record.type.value
        if kind == "Pub":
            lines += [java_format(TRACE_ROW, "#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes",
                                  "#Status"), _trace_row("Pub", entry), ""]
        elif kind == "SubAfter":
            consumers.setdefault(entry.record.group or "null", []).append(entry)
    for group in java_hash_order(list(consumers), 16):
        lines.append(java_format(TRACE_ROW, "#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes",
                                 "#Status"))
        lines += [_trace_row("Sub", entry) for entry in consumers[group]] + [""]
    return lines


CQ_RULE = "======================================"


def query_cq_text(found: BrokerQueueUnits) -> str:
    """QueryConsumeQueueCommand's output for one broker's answer that holds units: the group's subscription and
    filter data when asked, the queue's bounds, then each unit as ConsumeQueueData.toString() (no CQ extension
    here, so its extension fields print as null)."""
    out = []
    if found.subscription_json is not None:
        out.append(f"Subscription data: \n{fastjson_pretty(found.subscription_json)}\n{CQ_RULE}\n")
    if found.filter_data is not None:
        out.append(f"Filter data: \n{found.filter_data}\n{CQ_RULE}\n")
    out.append(f"Queue data: \nmax: {found.max_index}, min: {found.min_index}\n{CQ_RULE}\n")
    out += [f"idx: {u.index}\nConsumeQueueData{{physicOffset={u.physic_offset}, physicSize={u.physic_size}, "
            f"tagsCode={u.tags_code}, extendDataJson='null', bitMap='null', eval=false, msg='null'}}\n{CQ_RULE}\n"
            for u in found.units or []]
    return "".join(out)
