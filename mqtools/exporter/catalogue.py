"""Every metric `mq exporter` serves: its name, help and label names, in one place.

The rocketmq_* names and labels are rocketmq-exporter's, so Grafana dashboard 10477 works unchanged; the
mq_* ones are ours (replication, readiness, heartbeats, controller mode, and the exporter's own polls).
"""

from __future__ import annotations

from dataclasses import dataclass

BROKER = ("cluster", "brokerIP", "broker")
RUNTIME = ("cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version")
TOPIC = ("cluster", "broker", "topic")
GROUP_DIFF = ("group", "topic", "countOfOnlineConsumers", "msgModel")
GROUP_BROKER = ("cluster", "broker", "topic", "group")
HA = ("cluster", "broker", "master", "slave")
HA_GROUP = ("cluster", "broker")

#: rocketmq_brokeruntime_<suffix>: the runtime info key (GET_BROKER_RUNTIME_INFO) it comes from, and which of
#: a "10s 1m 10m" triple (0, 1, 2) where the value is one.
RUNTIME_KEYS: dict[str, tuple[str, int | None]] = {
    "put_tps10": ("putTps", 0), "put_tps60": ("putTps", 1), "put_tps600": ("putTps", 2),
    "gettotal_tps10": ("getTotalTps", 0), "gettotal_tps60": ("getTotalTps", 1), "gettotal_tps600": ("getTotalTps", 2),
    "getfound_tps10": ("getFoundTps", 0), "getfound_tps60": ("getFoundTps", 1), "getfound_tps600": ("getFoundTps", 2),
    "getmiss_tps10": ("getMissTps", 0), "getmiss_tps60": ("getMissTps", 1), "getmiss_tps600": ("getMissTps", 2),
    "gettransfered_tps10": ("getTransferedTps", 0), "gettransfered_tps60": ("getTransferedTps", 1),
    "gettransfered_tps600": ("getTransferedTps", 2),
    "commitlog_maxoffset": ("commitLogMaxOffset", None), "commitlog_minoffset": ("commitLogMinOffset", None),
    "commitlog_disk_ratio": ("commitLogDiskRatio", None), "consumequeue_disk_ratio": ("consumeQueueDiskRatio", None),
    "dispatch_behind_bytes": ("dispatchBehindBytes", None), "dispatch_maxbuffer": ("dispatchMaxBuffer", None),
    "send_threadpool_queue_size": ("sendThreadPoolQueueSize", None),
    "send_threadpoolqueue_capacity": ("sendThreadPoolQueueCapacity", None),
    "send_threadpoolqueue_headwait_timemills": ("sendThreadPoolQueueHeadWaitTimeMills", None),
    "pull_threadpoolqueue_size": ("pullThreadPoolQueueSize", None),
    "pull_threadpoolqueue_capacity": ("pullThreadPoolQueueCapacity", None),
    "pull_threadpoolqueue_headwait_timemills": ("pullThreadPoolQueueHeadWaitTimeMills", None),
    "query_threadpoolqueue_size": ("queryThreadPoolQueueSize", None),
    "query_threadpool_queue_capacity": ("queryThreadPoolQueueCapacity", None),
    "query_threadpoolqueue_headwait_timemills": ("queryThreadPoolQueueHeadWaitTimeMills", None),
    "pagecache_lock_time_mills": ("pageCacheLockTimeMills", None),
    "remain_howmanydata_toflush": ("remainHowManyDataToFlush", None),
    "remain_transientstore_buffer_numbs": ("remainTransientStoreBufferNumbs", None),
    "msg_put_total_today_now": ("msgPutTotalTodayNow", None), "msg_gettotal_today_now": ("msgGetTotalTodayNow", None),
    "msg_puttotal_todaymorning": ("msgPutTotalTodayMorning", None),
    "msg_gettotal_todaymorning": ("msgGetTotalTodayMorning", None),
    "msg_puttotal_yesterdaymorning": ("msgPutTotalYesterdayMorning", None),
    "msg_gettotal_yesterdaymorning": ("msgGetTotalYesterdayMorning", None),
    "putmessage_times_total": ("putMessageTimesTotal", None), "put_message_size_total": ("putMessageSizeTotal", None),
    "put_message_average_size": ("putMessageAverageSize", None),
    "putmessage_entire_time_max": ("putMessageEntireTimeMax", None),
    "getmessage_entire_time_max": ("getMessageEntireTimeMax", None),
    "earliest_message_timestamp": ("earliestMessageTimeStamp", None),
    "start_accept_sendrequest_time": ("startAcceptSendRequestTimeStamp", None),
    "put_latency_99": ("putLatency99", None), "put_latency_999": ("putLatency999", None),
}
#: rocketmq_brokeruntime_pmdt_<suffix>: the bucket of putMessageDistributeTime it counts.
PUT_DISTRIBUTION = {"0ms": "<=0ms", "0to10ms": "0~10ms", "10to50ms": "10~50ms", "50to100ms": "50~100ms",
                    "100to200ms": "100~200ms", "200to500ms": "200~500ms", "500to1s": "500ms~1s", "1to2s": "1~2s",
                    "2to3s": "2~3s", "3to4s": "3~4s", "4to5s": "4~5s", "5to10s": "5~10s", "10stomore": "10s~"}


@dataclass(frozen=True, slots=True)
class Family:
    help: str
    labels: tuple[str, ...]


FAMILIES: dict[str, Family] = {
    "rocketmq_broker_tps": Family("messages put per second over the last minute (BROKER_PUT_NUMS)", BROKER),
    "rocketmq_broker_qps": Family("messages got per second over the last minute (BROKER_GET_NUMS)", BROKER),
    "rocketmq_broker_commitlog_diff": Family("bytes the slave (brokerIP) is behind its master", BROKER),
    **{f"rocketmq_brokeruntime_{s}": Family(f"runtime info {key}", RUNTIME) for s, (key, _) in RUNTIME_KEYS.items()},
    "rocketmq_brokeruntime_commitlogdir_capacity_total": Family("bytes of the commitlog's disk", RUNTIME),
    "rocketmq_brokeruntime_commitlogdir_capacity_free": Family("bytes free on the commitlog's disk", RUNTIME),
    **{f"rocketmq_brokeruntime_pmdt_{s}": Family(f"puts that took {b}", RUNTIME) for s, b in PUT_DISTRIBUTION.items()},
    "rocketmq_producer_offset": Family("sum of the topic's queue max offsets on the broker", TOPIC),
    "rocketmq_producer_tps": Family("messages put to the topic per second over the last minute", TOPIC),
    "rocketmq_topic_retry_offset": Family("sum of the retry topic's queue max offsets on the broker", TOPIC),
    "rocketmq_group_diff": Family("messages the group has not consumed from the topic", GROUP_DIFF),
    "rocketmq_group_retrydiff": Family("messages the group has not consumed from its retry topic", GROUP_DIFF),
    "rocketmq_group_dlqdiff": Family("messages the group has not consumed from its dead-letter topic", GROUP_DIFF),
    "rocketmq_consumer_offset": Family("sum of the group's committed offsets on the broker", GROUP_BROKER),
    "rocketmq_consumer_tps": Family("messages the group got per second over the last minute", GROUP_BROKER),
    "rocketmq_group_get_latency_by_storetime": Family(
        "milliseconds since the oldest message the group has not consumed was stored (0 when caught up)", GROUP_BROKER),
    "mq_ha_diff_bytes": Family("bytes the slave is behind its master", HA),
    "mq_ha_diff_messages": Family("messages the slave is behind (the diff over the master's average size)", HA),
    "mq_ha_catchup_seconds": Family("seconds for the slave to catch up at its current transfer speed", HA),
    "mq_ha_in_sync": Family("1 when the master counts the slave in sync", HA),
    "mq_broker_open_files": Family("file descriptors the broker holds (mq's brokers report it, Apache's do not)",
                                   ("cluster", "brokerIP")),
    "mq_broker_open_files_limit": Family("the broker's open-file limit: at it, new connections are closed and a put "
                                         "that needs a new queue file is refused", ("cluster", "brokerIP")),
    "mq_broker_tls_certificate_expiry_timestamp_seconds": Family(
        "when the TLS certificate the broker serves expires (a renewed one counts once the broker has loaded it)",
        ("cluster", "brokerIP")),
    "mq_broker_up": Family("1 when the broker (master or slave, as the name servers list it) answered the exporter's last "
                           "poll, 0 when it did not (its figures are then not known)",
                           ("cluster", "brokerIP", "broker", "role")),
    "mq_broker_set_master_up": Family("1 when the broker set has a registered master that answers, 0 when it has none "
                                      "(its slaves serve reads only) or the master does not answer", HA_GROUP),
    "mq_ha_ready": Family("1 when stopping the group's master now is safe (`mq admin ha ready`)", HA_GROUP),
    "mq_controller_epoch": Family("the group's master epoch at the controllers (controller mode)", HA_GROUP),
    "mq_controller_sync_state_set_size": Family("brokers in the group's SyncStateSet (controller mode)", HA_GROUP),
    "mq_timer_pending": Family("timer messages (RIP-43) stored for the topic and not yet delivered", TOPIC),
    "mq_timer_read_behind_seconds": Family("seconds the broker's timer wheel is behind in delivering", HA_GROUP),
    "mq_timer_offset_behind": Family("timer messages stored but not yet in the broker's wheel", HA_GROUP),
    "mq_group_pop_inflight": Family("messages popped by the group (POP) and not yet acknowledged", ("group",)),
    "mq_group_pop_revive_due": Family("of those, the ones past their invisible time (coming back)", ("group",)),
    "mq_proxy_up": Family("1 when the proxy (mq exporter --proxy) answered the last poll on its remoting port, 0 when "
                          "it did not", ("proxy",)),
    "mq_proxy_clients": Family("gRPC clients the proxy serves, by kind (PUSH, SIMPLE consumer, PRODUCER) and language",
                               ("proxy", "kind", "language")),
    "mq_proxy_consumer_groups": Family("consumer groups with a gRPC client on the proxy", ("proxy",)),
    "mq_namesrv_up": Family("1 when the name server answered the exporter's last probe (asked on its own), 0 when "
                            "it did not", ("namesrv",)),
    "mq_namesrv_brokers": Family("brokers (masters and slaves) the name server lists", ("namesrv",)),
    "mq_namesrv_tls_certificate_expiry_timestamp_seconds": Family(
        "when the TLS certificate the name server served to the exporter's verified handshake expires", ("namesrv",)),
    "mq_namesrv_heartbeat_age_seconds": Family("seconds since the name server last heard from the broker",
                                               ("namesrv", "cluster", "broker", "brokerIP")),
    "mq_exporter_poll_seconds": Family("how long the exporter's last poll of this job took", ("job",)),
    "mq_exporter_poll_ok": Family("1 when the exporter's last poll of this job succeeded", ("job",)),
}
