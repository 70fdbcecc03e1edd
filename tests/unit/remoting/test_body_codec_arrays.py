"""List and set fields of bodies take a JSON array (or null), nothing else: any iterable was taken, so
{"syncStateSet":"12"} decoded to {1, 2} and a map to its keys."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from mqtools.remoting.bodies import Body
from mqtools.remoting.body_codec import from_obj
from mqtools.remoting.controller import SyncStateSet
from mqtools.remoting.errors import BodyError


@dataclass(slots=True)
class Lists(Body):
    names: list[str] = field(default_factory=list)
    ids: frozenset[int] = frozenset()


@pytest.mark.parametrize("raw", ["12", {"1": 2}, 12, True, 1.5], ids=repr)
def test_a_set_field_that_is_not_an_array_is_a_body_error(raw: Any) -> None:
    with pytest.raises(BodyError, match="not a JSON array"):
        from_obj(SyncStateSet, {"syncStateSet": raw, "syncStateSetEpoch": 1})
    with pytest.raises(BodyError, match="not a JSON array"):
        SyncStateSet.from_json(json.dumps({"syncStateSet": raw}).encode())


@pytest.mark.parametrize("raw", ["ab", {"a": "b"}])
def test_list_and_frozenset_fields_too(raw: Any) -> None:
    with pytest.raises(BodyError, match="not a JSON array"):
        from_obj(Lists, {"names": raw})
    with pytest.raises(BodyError, match="not a JSON array"):
        from_obj(Lists, {"ids": raw})


def test_arrays_and_null_still_decode() -> None:
    assert SyncStateSet.from_json(b'{"syncStateSet":[2,1,"3"],"syncStateSetEpoch":4}') == SyncStateSet({1, 2, 3}, 4)
    assert from_obj(Lists, {"names": ["a", "b"], "ids": [1, 1]}) == Lists(["a", "b"], frozenset({1}))
    assert from_obj(Lists, {"names": None}).names is None
