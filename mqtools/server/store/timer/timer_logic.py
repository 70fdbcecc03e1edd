"""The timer's decisions, without IO or clocks: which messages are timer messages, where the send
path moves them, which slot a message is filed under (and whether it must roll), and what the
message written back to its topic looks like.

Apache's rules (HookUtils.transformTimerMessage, TimerMessageStore.doEnqueue / convert):

* A message carrying DELAY > 0 is a delay-level message: its timer properties are dropped.
* Otherwise TIMER_DELAY_SEC, else TIMER_DELAY_MS (both from the broker's now), else TIMER_DELIVER_MS
  give the delivery time; a value that is not a Java long makes the send illegal.
* A time in the future more than timerMaxDelaySec ahead is illegal. Otherwise it is rounded down to
  the precision (an exact multiple goes one tick earlier, since the tick at T is delivered once
  T + precision has begun), kept as TIMER_OUT_MS, the real topic and queue go to REAL_TOPIC /
  REAL_QID and the message is stored in ``rmq_sys_wheel_timer`` queue 0.
* A time not in the future is delivered at once: the message stays in its topic as it came,
  unless it is a delete marker (TIMER_DEL_UNIQKEY), which is illegal then.
* A message due further ahead than the roll window is filed at the window's end (or half of it,
  if it would come due soon after) with the roll bit, and is re-enqueued from there.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from mqtools.common import properties as P
from mqtools.common.javanum import LONG_MAX, LONG_RANGE
from mqtools.common.message import MessageExt, MessageExtBrokerInner
from mqtools.server.store.delay_levels import delay_level_of
from mqtools.server.store.timer.timer_log import MAGIC_DEFAULT, MAGIC_DELETE, MAGIC_ROLL

TIMER_TOPIC = "rmq_sys_wheel_timer"
TIMER_DELIVER_MS = P.TIMER_DELIVER_MS
TIMER_DELAY_SEC = P.TIMER_DELAY_SEC
TIMER_DELAY_MS = P.TIMER_DELAY_MS
TIMER_OUT_MS = P.TIMER_OUT_MS
TIMER_ENQUEUE_MS = P.TIMER_ENQUEUE_MS
TIMER_DEQUEUE_MS = P.TIMER_DEQUEUE_MS
TIMER_ROLL_TIMES = P.TIMER_ROLL_TIMES
TIMER_DEL_UNIQKEY = P.TIMER_DEL_UNIQKEY
#: The properties a producer sets to ask for a delivery time.
REQUEST_KEYS = (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS)
#: Long.MAX_VALUE: TIMER_ENQUEUE_MS of a message that was already due when it reached the wheel.
NEVER_ENQUEUED = LONG_MAX
#: NEVER_ENQUEUED as the TIMER_ENQUEUE_MS property holds it.
NEVER_ENQUEUED_TEXT = str(NEVER_ENQUEUED)
#: Apache's TIMER_BLANK_SLOTS: ticks kept free at the wheel's far end.
TIMER_BLANK_SLOTS = 60
#: The precisions Apache accepts (setTimerPrecisionMs snaps a value down to one of them).
PRECISION_CANDIDATES = (100, 200, 500, 1000)
_JAVA_LONG = re.compile(r"[+-]?\d+")
#: What rewrite_for_timer adds besides TIMER_OUT_MS (whose presence means no rewrite).
_WHEEL_KEYS = (P.REAL_TOPIC, P.REAL_QID)


class Rewrite(enum.Enum):
    """What the send path does with a message (names after Apache's PutMessageStatus)."""

    NOT_TIMER = "not a timer message"
    DUE_NOW = "due now: stored in its own topic"
    REWRITTEN = "moved to rmq_sys_wheel_timer"
    WHEEL_TIMER_MSG_ILLEGAL = "WHEEL_TIMER_MSG_ILLEGAL"
    WHEEL_TIMER_NOT_ENABLE = "WHEEL_TIMER_NOT_ENABLE"
    WHEEL_TIMER_FLOW_CONTROL = "WHEEL_TIMER_FLOW_CONTROL"


def snap_precision(value: int) -> int:
    """timerPrecisionMs as Apache takes it: the largest candidate not above ``value`` (100 at least)."""
    chosen = PRECISION_CANDIDATES[0]
    for candidate in PRECISION_CANDIDATES:
        if value >= candidate:
            chosen = candidate
    return chosen


def roll_window_slots(configured: int, slots_total: int) -> int:
    """timerRollWindowSlot, or the whole wheel less its blank ticks when out of [2, that]."""
    if configured > slots_total - TIMER_BLANK_SLOTS or configured < 2:
        return slots_total - TIMER_BLANK_SLOTS
    return configured


def parse_java_long(text: str) -> int:
    """Long.parseLong: ValueError on anything else (spaces, underscores, decimals, overflow)."""
    if text.isdigit() and text.isascii() and len(text) < 19:  # the common case: plain, well within range
        return int(text)
    if not _JAVA_LONG.fullmatch(text):
        raise ValueError(f"not a long: {text!r}")
    value = int(text)
    if value not in LONG_RANGE:
        raise ValueError(f"out of the long range: {text!r}")
    return value


def is_timer_request(topic: str, props: dict[str, str]) -> bool:
    """Apache's checkIfTimerMessage, after a delay level was ruled out."""
    if topic == TIMER_TOPIC or TIMER_OUT_MS in props:
        return False
    return not props.keys().isdisjoint(REQUEST_KEYS)


def drop_timer_request(props: dict[str, str]) -> bool:
    """A delay-level message keeps its level and loses its timer properties; True if any went."""
    dropped = False
    for key in REQUEST_KEYS:
        if props.pop(key, None) is not None:
            dropped = True
    return dropped


@dataclass(frozen=True, slots=True)
class TimerSettings:
    """What the send path needs of the store config."""

    enabled: bool = True
    precision_ms: int = 1000
    max_delay_sec: int = 3 * 24 * 3600


@lru_cache(maxsize=8)
def timer_settings(enabled: bool, precision_ms: int, max_delay_sec: int) -> TimerSettings:
    """The settings for these config values (timerWheelEnable, timerPrecisionMs as configured,
    timerMaxDelaySec), built once: the send path asks for them on every timer message, and the config can
    change at run time."""
    return TimerSettings(enabled, snap_precision(precision_ms), max_delay_sec)


def rewrite_for_timer(
    msg: Any, now_ms: int, settings: TimerSettings, is_reject: Callable[[int], bool] | None = None
) -> Rewrite:
    """Apache's handleScheduleMessage for timer properties, on a message whose DELAY is not set.

    On REWRITTEN the message (topic, queue_id, properties) now points at the wheel; the caller
    refreshes its encoded properties. Other outcomes leave it unchanged.
    """
    props = msg.properties
    if not is_timer_request(msg.topic, props):
        return Rewrite.NOT_TIMER
    if not settings.enabled:
        return Rewrite.WHEEL_TIMER_NOT_ENABLE
    try:
        if TIMER_DELAY_SEC in props:
            deliver_ms = now_ms + parse_java_long(props[TIMER_DELAY_SEC]) * 1000
        elif TIMER_DELAY_MS in props:
            deliver_ms = now_ms + parse_java_long(props[TIMER_DELAY_MS])
        else:
            deliver_ms = parse_java_long(props[TIMER_DELIVER_MS])
    except ValueError:
        return Rewrite.WHEEL_TIMER_MSG_ILLEGAL
    if deliver_ms <= now_ms:
        if TIMER_DEL_UNIQKEY in props:
            return Rewrite.WHEEL_TIMER_MSG_ILLEGAL
        return Rewrite.DUE_NOW
    if deliver_ms - now_ms > settings.max_delay_sec * 1000:
        return Rewrite.WHEEL_TIMER_MSG_ILLEGAL
    precision = settings.precision_ms
    deliver_ms = (
        deliver_ms - precision if deliver_ms % precision == 0 else deliver_ms // precision * precision
    )
    if is_reject is not None and is_reject(deliver_ms):
        return Rewrite.WHEEL_TIMER_FLOW_CONTROL
    props[TIMER_OUT_MS] = str(deliver_ms)
    props[P.REAL_TOPIC] = msg.topic
    props[P.REAL_QID] = str(msg.queue_id)
    msg.topic = TIMER_TOPIC
    msg.queue_id = 0
    return Rewrite.REWRITTEN


def redirect_to_timer(
    msg: Any, now_ms: int, settings: TimerSettings, is_reject: Callable[[int], bool] | None = None
) -> Rewrite:
    """For any put of a MessageExtBrokerInner (a send, or the broker's own puts such as POP's revive
    checkpoints, which Apache also times this way): a DELAY level wins and the timer properties go;
    otherwise ``rewrite_for_timer``. The properties string (what the store writes, WAIT already left out) is
    re-rendered from the map when a property went (or it was not rendered yet), and has the rewrite's three
    appended when only they came."""
    props = msg.properties
    if props.keys().isdisjoint(REQUEST_KEYS):
        return Rewrite.NOT_TIMER
    if delay_level_of(props) > 0:
        if drop_timer_request(props):
            msg.properties_string = stored_properties(props)
        return Rewrite.NOT_TIMER
    appendable = msg.properties_string is not None and props.keys().isdisjoint(_WHEEL_KEYS)
    outcome = rewrite_for_timer(msg, now_ms, settings, is_reject)
    if outcome is Rewrite.REWRITTEN:
        msg.properties_string = _with_wheel_keys(msg.properties_string, props) if appendable \
            else stored_properties(props)
    return outcome


def _with_wheel_keys(stored: str, props: dict[str, str]) -> str:
    """``stored`` with the properties rewrite_for_timer added after it."""
    sep = P.PROPERTY_SEPARATOR if stored and not stored.endswith(P.PROPERTY_SEPARATOR) else ""
    return (f"{stored}{sep}{TIMER_OUT_MS}\x01{props[TIMER_OUT_MS]}\x02{P.REAL_TOPIC}\x01{props[P.REAL_TOPIC]}"
            f"\x02{P.REAL_QID}\x01{props[P.REAL_QID]}\x02")


def stored_properties(props: dict[str, str]) -> str:
    """The properties string a broker stores: all but WAIT."""
    return P.properties_to_string({k: v for k, v in props.items() if k != P.WAIT})


def plan_enqueue(
    delayed_ms: int, write_time_ms: int, window_slots: int, precision_ms: int, delete: bool = False
) -> tuple[int, int]:
    """(slot time, magic) for a record due at ``delayed_ms`` written when the wheel is at
    ``write_time_ms``: past the roll window it is filed at the window's end, or at half of it when it
    would be due within a third of a window after that, and marked to roll."""
    magic = MAGIC_DEFAULT
    window_ms = window_slots * precision_ms
    if delayed_ms - write_time_ms >= window_ms:
        magic |= MAGIC_ROLL
        if delayed_ms - write_time_ms - window_ms < window_slots // 3 * precision_ms:
            delayed_ms = write_time_ms + window_slots // 2 * precision_ms
        else:
            delayed_ms = write_time_ms + window_ms
    if delete:
        magic |= MAGIC_DELETE
    return delayed_ms, magic


def is_reject(congest_num: int, limit: int, draw: int) -> bool:
    """timerCongestNumEachSlot flow control; ``draw`` is a random int in [0, 1000)."""
    if congest_num <= limit:
        return False
    if congest_num >= limit * 2:
        return True
    return draw > 1000 * (congest_num - limit) / (limit + 0.1)


def delete_key(real_topic: str | None, uniq_key: str) -> str:
    """How a delete marker names the message it cancels (TIMER_DEL_UNIQKEY's value)."""
    return f"{real_topic}+{uniq_key}"


def written_back(msg: MessageExt, enqueue_time: int, roll: bool, now_ms: int) -> MessageExtBrokerInner:
    """The message the wheel puts when its tick comes (Apache's convert / convertMessage).

    TIMER_ENQUEUE_MS (unless -1), TIMER_DEQUEUE_MS and, on a roll, TIMER_ROLL_TIMES + 1 are set; a
    roll goes back to the wheel's topic and queue, a delivery to REAL_TOPIC / REAL_QID. As in Apache
    the stored properties are rendered before REAL_TOPIC / REAL_QID leave the map, so the delivered
    message still carries them, and no WAIT is stored (nobody waits for this put). ValueError when a property
    it needs is not a number (or REAL_QID is negative): a message sent straight to the wheel's topic can say
    anything.
    """
    props = dict(msg.properties)
    if enqueue_time != -1:
        props[TIMER_ENQUEUE_MS] = str(enqueue_time)
    if roll:
        props[TIMER_ROLL_TIMES] = str(int(props.get(TIMER_ROLL_TIMES, "0") or 0) + 1)
    props[TIMER_DEQUEUE_MS] = str(now_ms)
    stored = stored_properties(props)
    if roll:
        topic, queue_id = msg.topic, msg.queue_id
    else:
        topic, queue_id = props[P.REAL_TOPIC], int(props[P.REAL_QID])
        if queue_id < 0:
            raise ValueError(f"{P.REAL_QID} {queue_id}")
        del props[P.REAL_TOPIC], props[P.REAL_QID]
    props[P.WAIT] = "false"
    return MessageExtBrokerInner(
        topic=topic,
        body=msg.body,
        flag=msg.flag,
        properties=props,
        queue_id=queue_id,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        store_host=msg.store_host,
        reconsume_times=msg.reconsume_times,
        properties_string=stored,
    )
