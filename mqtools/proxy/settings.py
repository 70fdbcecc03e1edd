"""Client settings: what a client reports on its Telemetry stream and what the proxy answers
(GrpcClientSettingsManager).

A producer is answered its settings with the proxy's retry policy (exponential backoff) and publishing limits
(max body size, whether to check message types). A consumer is answered the proxy's receive batch size and
long-polling timeout, FIFO from its group's consumeMessageOrderly, and the group's retry policy (max attempts =
retryMaxTimes + 1; a group without one has Apache's customized backoff 1s 5s 10s 30s 1m ... 2h).
"""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.proxy.config import ProxyConfig

#: CustomizedRetryPolicy's default `next` (ms): the delay levels of 4.x from level 3 on.
DEFAULT_CUSTOMIZED_BACKOFF_MS = (1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000,
                                 420_000, 480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000)


@dataclass(frozen=True, slots=True)
class GroupPolicy:
    """What of a subscription group's config the settings answer carries."""

    consume_message_orderly: bool = False
    retry_max_times: int = 16


def producer_settings(settings: pb.Settings, config: ProxyConfig) -> pb.Settings:
    """mergeProducerData: the proxy's retry policy and publishing limits over what the producer reported."""
    out = pb.Settings()
    out.CopyFrom(settings)
    policy = out.backoff_policy
    policy.max_attempts = config.grpc_client_producer_max_attempts
    exp = policy.exponential_backoff
    exp.initial.FromMilliseconds(config.grpc_client_producer_backoff_initial_millis)
    exp.max.FromMilliseconds(config.grpc_client_producer_backoff_max_millis)
    exp.multiplier = float(config.grpc_client_producer_backoff_multiplier)
    out.publishing.validate_message_type = config.enable_topic_message_type_check
    out.publishing.max_body_size = config.max_message_size
    return out


def consumer_settings(settings: pb.Settings, config: ProxyConfig, group: GroupPolicy) -> pb.Settings:
    """mergeSubscriptionData: batch size, long polling, FIFO and the group's retry policy."""
    out = pb.Settings()
    out.CopyFrom(settings)
    sub = out.subscription
    sub.receive_batch_size = config.grpc_client_consumer_long_polling_batch_size
    sub.long_polling_timeout.FromMilliseconds(config.grpc_client_consumer_max_long_polling_timeout_millis)
    sub.fifo = group.consume_message_orderly
    out.backoff_policy.max_attempts = group.retry_max_times + 1
    backoff = out.backoff_policy.customized_backoff
    del backoff.next[:]
    for ms in DEFAULT_CUSTOMIZED_BACKOFF_MS:
        backoff.next.add().FromMilliseconds(ms)
    return out


def answer(settings: pb.Settings, config: ProxyConfig, group: GroupPolicy | None) -> pb.Settings:
    """The settings the proxy answers for what a client reported (metrics off, as Apache's default)."""
    if settings.HasField("publishing"):
        out = producer_settings(settings, config)
    elif settings.HasField("subscription"):
        out = consumer_settings(settings, config, group or GroupPolicy())
    else:
        out = pb.Settings()
        out.CopyFrom(settings)
    out.metric.on = False
    out.metric.ClearField("endpoints")
    return out
