"""Tag subscription expressions: parsing into tags and codes, and the client-side match.

Codes are Java String.hashCode values of each tag, which is what the broker's consume queue
stores ("TagA" -> 2598919); "Aa" and "BB" share the code 2112, which is why the client must
check the tag itself again.
"""

from __future__ import annotations

import time

import pytest

from mqtools.client.subscription import SUB_ALL, matches, parse_subscription
from mqtools.common import properties as P
from mqtools.common.message import MessageExt


def tagged(tags: str | None) -> MessageExt:
    msg = MessageExt("T", b"x")
    if tags is not None:
        msg.properties[P.TAGS] = tags
    return msg


@pytest.mark.parametrize("expression", ["*", None, "", "   ", " * "])
def test_star_none_and_blank_subscribe_to_everything(expression: str | None) -> None:
    sub = parse_subscription("T", expression)
    assert (sub.topic, sub.sub_string, sub.tags_set, sub.code_set) == ("T", SUB_ALL, set(), set())


def test_or_expression_gives_each_tag_and_its_code() -> None:
    sub = parse_subscription("T", "TagA || TagB")
    assert sub.sub_string == "TagA || TagB"
    assert sub.tags_set == {"TagA", "TagB"}
    assert sub.code_set == {2598919, 2598920}


def test_whitespace_and_empty_alternatives_are_dropped() -> None:
    sub = parse_subscription("T", "  TagA||  TagB ||   || ")
    assert sub.sub_string == "TagA||  TagB ||   ||"
    assert sub.tags_set == {"TagA", "TagB"}
    assert sub.code_set == {2598919, 2598920}


def test_a_repeated_tag_counts_once() -> None:
    sub = parse_subscription("T", "TagA || TagA")
    assert (sub.tags_set, sub.code_set) == ({"TagA"}, {2598919})


def test_single_tag() -> None:
    sub = parse_subscription("T", "TagA")
    assert (sub.sub_string, sub.tags_set, sub.code_set) == ("TagA", {"TagA"}, {2598919})


def test_sub_version_is_the_parse_time_in_microseconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_123_456_789)
    assert parse_subscription("T", "TagA").sub_version == 1_700_000_000_123_456
    assert parse_subscription("T", "*").sub_version == 1_700_000_000_123_456


def test_tag_expression_matches_only_its_tags() -> None:
    sub = parse_subscription("T", "TagA || TagB")
    assert [matches(sub, tagged(t)) for t in ("TagA", "TagB", "TagC", None, "taga")] == [
        True, True, False, False, False]


def test_star_matches_any_message_tagged_or_not() -> None:
    sub = parse_subscription("T", "*")
    assert [matches(sub, tagged(t)) for t in ("TagA", "", None)] == [True, True, True]


def test_a_hash_collision_passes_the_broker_but_not_the_client() -> None:
    sub = parse_subscription("T", "Aa")
    assert sub.code_set == {2112}
    assert parse_subscription("T", "BB").code_set == {2112}
    assert matches(sub, tagged("Aa"))
    assert not matches(sub, tagged("BB"))
