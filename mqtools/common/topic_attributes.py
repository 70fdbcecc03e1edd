"""Topic attributes (RocketMQ 5's TopicAttributes): which keys a topic may carry, their values, and how a
create or update request's modification string (`+message.type=FIFO,-cleanup.policy`) alters what a topic
holds, with the refusals Apache's broker gives (AttributeUtil). Plain functions: the broker's topic table and
its admin processor call them; a refusal is a TopicAttributeError carrying the remark Apache's broker gives."""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.common.javanum import LONG_MAX

MESSAGE_TYPE = "message.type"


class TopicAttributeError(ValueError):
    """A modification the broker refuses; the message is the remark Apache's broker answers with."""


@dataclass(frozen=True, slots=True)
class TopicAttribute:
    name: str
    changeable: bool
    """Whether an existing topic may change it (set only when the topic is created otherwise)."""
    values: frozenset[str] | None = None
    """The values allowed (an enum attribute); None: a long in `low..high`."""
    low: int = 0
    high: int = 0

    def verify(self, value: str) -> None:
        if self.values is not None:
            if value not in self.values:
                raise TopicAttributeError(f"value is not in set: [{', '.join(sorted(self.values))}]")
            return
        try:
            number = int(value)
        except ValueError:
            raise TopicAttributeError(f"value is not a long: {value}") from None
        if not self.low <= number <= self.high:
            raise TopicAttributeError(f"value is not in range({self.low}, {self.high})")


ALL: dict[str, TopicAttribute] = {a.name: a for a in (
    TopicAttribute("queue.type", False, frozenset({"BatchCQ", "SimpleCQ"})),
    TopicAttribute("cleanup.policy", False, frozenset({"DELETE", "COMPACTION"})),
    TopicAttribute(MESSAGE_TYPE, True, frozenset({"UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"})),
    TopicAttribute("reserve.time", True, None, -1, LONG_MAX),
)}


def parse_modification(text: str | None) -> dict[str, str]:
    """`+k=v,+k2=v2,-k3` -> {"+k": "v", "+k2": "v2", "-k3": ""} (AttributeParser.parseToMap)."""
    out: dict[str, str] = {}
    for kv in (text or "").split(","):
        if not kv:
            continue
        if "=" in kv:
            key, _, value = kv.partition("=")
            if "+" not in key:
                raise TopicAttributeError(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = kv, ""
            if "-" not in key:
                raise TopicAttributeError(f"delete attribute format is wrong: {key}")
        if key in out:
            raise TopicAttributeError(f"key duplication: {key}")
        out[key] = value
    return out


def alter(create: bool, current: dict[str, str], modification: dict[str, str]) -> dict[str, str]:
    """The attributes a topic holds after `modification` (keys signed + or -) on `current`
    (AttributeUtil.alterCurrentAttributes): a new topic may only add; a key must be one of ALL, and an
    unchangeable one is set only at creation."""
    final = dict(current)
    seen: set[str] = set()
    for signed, value in modification.items():
        key = signed[1:]
        if not key or "+" in key or "-" in key:
            raise TopicAttributeError("kv string format wrong.")
        if key in seen:
            raise TopicAttributeError(f"alter duplication key. key: {key}")
        seen.add(key)
        adding = signed.startswith("+")
        if create and not adding:
            raise TopicAttributeError(f"only add attribute is supported while creating topic. key: {key}")
        if not adding and not signed.startswith("-"):
            raise TopicAttributeError(f"wrong format key: {key}")
        if not adding and key not in current:
            raise TopicAttributeError(f"attempt to delete a nonexistent key: {key}")
        attribute = ALL.get(key)
        if attribute is None:
            raise TopicAttributeError(f"unsupported key: {key}")
        if not create and not attribute.changeable:
            raise TopicAttributeError(f"attempt to update an unchangeable attribute. key: {key}")
        if adding:
            attribute.verify(value)
            final[key] = value
        else:
            final.pop(key, None)
    return final
