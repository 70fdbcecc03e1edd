"""The message model: what producers send, what the store keeps, what consumers get back.

Hosts are ``(host, port)`` tuples; the codec turns them into RocketMQ's 8-byte (IPv4) or
20-byte (IPv6) address+port fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mqtools.common import properties as P

Host = tuple[str, int]
NO_HOST: Host = ("0.0.0.0", 0)


class _IntProperty:
    """A message property read and written as an integer; None when the message does not carry it."""

    def __init__(self, key: str, doc: str) -> None:
        self.key = key
        self.__doc__ = doc

    def __get__(self, msg: Message | None, owner: type | None = None) -> int | None:
        if msg is None:
            return self  # type: ignore[return-value]
        value = msg.properties.get(self.key)
        return int(value) if value is not None else None

    def __set__(self, msg: Message, value: int) -> None:
        msg.properties[self.key] = str(int(value))


@dataclass(slots=True)
class Message:
    """A message as a producer builds it: topic, body, user flag and string properties."""

    topic: str
    body: bytes = b""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def tags(self) -> str | None:
        return self.properties.get(P.TAGS)

    @property
    def keys(self) -> list[str]:
        return P.message_keys(self.properties)

    @property
    def unique_key(self) -> str | None:
        return self.properties.get(P.UNIQ_KEY)

    # --- timer messages (RocketMQ 5): the Java Message's setDeliverTimeMs / setDelayTimeMs / setDelayTimeSec.
    # A RocketMQ 5 broker keeps such a message in its timer wheel until then; a 4.x broker ignores them.

    deliver_time_ms = _IntProperty(P.TIMER_DELIVER_MS, "When the message is to be delivered (epoch ms).")
    delay_time_ms = _IntProperty(P.TIMER_DELAY_MS, "Delay in ms from the broker's receipt.")
    delay_time_sec = _IntProperty(P.TIMER_DELAY_SEC, "Delay in seconds from the broker's receipt.")

    @property
    def is_timed(self) -> bool:
        """Whether a delivery time or timer delay is set (such a message is never batched)."""
        return any(k in self.properties for k in (P.TIMER_DELIVER_MS, P.TIMER_DELAY_MS, P.TIMER_DELAY_SEC))


@dataclass(slots=True)
class MessageExt(Message):
    """A stored message, as decoded from the commitlog (every field of the stored layout)."""

    queue_id: int = 0
    store_size: int = 0
    queue_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: Host = NO_HOST
    store_timestamp: int = 0
    store_host: Host = NO_HOST
    msg_id: str = ""
    commit_log_offset: int = 0
    body_crc: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0


@dataclass(slots=True)
class MessageExtBrokerInner:
    """A message on its way into the store (one SEND_MESSAGE, a retry, a delayed re-delivery).

    ``properties_string`` is the encoded form that is written. The store fills ``store_timestamp``,
    ``queue_offset``, ``commit_log_offset`` and ``msg_id``; the consume queue's tag code it reads back
    from the stored properties (the Java hash of TAGS, or a deliver time for delay queues), as a slave
    or recovery does.
    """

    topic: str
    body: bytes = b""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    queue_id: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: Host = NO_HOST
    store_host: Host | None = None
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    properties_string: str | None = None
    store_timestamp: int = 0
    queue_offset: int = 0
    commit_log_offset: int = 0
    msg_id: str = ""

    def encoded_properties(self) -> str:
        if self.properties_string is None:
            self.properties_string = P.properties_to_string(self.properties)
        return self.properties_string


def reput_copy(msg: MessageExt, topic: str, queue_id: int, properties: dict[str, str], *,
               reconsume_times: int, delay_level: int = 0) -> MessageExtBrokerInner:
    """``msg`` put again by the broker itself (a retry or dead letter, a due delayed message), so it
    keeps its body, flags, born time and hosts. ``properties`` (the caller's edited copy) get DELAY
    ``delay_level`` (none at 0) and WAIT false: no producer waits for this put."""
    properties[P.WAIT] = "false"
    properties.pop(P.DELAY, None)
    if delay_level > 0:
        properties[P.DELAY] = str(delay_level)
    return MessageExtBrokerInner(
        topic=topic,
        body=msg.body,
        flag=msg.flag,
        properties=properties,
        queue_id=queue_id,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        store_host=msg.store_host,
        reconsume_times=reconsume_times,
        properties_string=P.properties_to_string(properties),
    )


@dataclass(slots=True)
class MessageExtBatch:
    """A SEND_BATCH_MESSAGE: ``body`` is the batch wire encoding (see codec.encode_batch) of
    messages that share topic, queue, sys flag, born/store host and reconsume times.

    ``properties`` are the batch's own (the request header's, with CLUSTER) and ``properties_string``
    their encoded form, which the store appends to every message's own properties, as Apache's
    CommitLog does."""

    topic: str
    body: bytes = b""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    queue_id: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: Host = NO_HOST
    store_host: Host | None = None
    reconsume_times: int = 0
    properties_string: str | None = None

    def encoded_properties(self) -> str:
        if self.properties_string is None:
            self.properties_string = P.properties_to_string(self.properties)
        return self.properties_string
