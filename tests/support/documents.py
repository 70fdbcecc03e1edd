"""Checks every document test makes: the view's JSON validates against its shipped schema, its columns
and rows agree, and (where the CLI's golden holds the command) its shape is the golden's."""

from __future__ import annotations

import jsonschema

from mqtools.common.presentation import View, load_schema, renderer
from support.jsongolden import load, shape


def check(view: View, golden: str | None = None) -> dict:
    """Validate `view` and return its document; `golden` names the CLI command whose shape it must have."""
    assert renderer(view.kind) is not None
    doc = view.document()
    jsonschema.validate(doc, load_schema(view.kind))
    for row in view.rows:
        assert len(row) == len(view.columns), (view.kind, row)
    if golden is not None:
        assert _same_keys(shape(doc), load()[golden]), (golden, shape(doc), load()[golden])
    return doc


def _same_keys(got: object, want: object) -> bool:
    """The golden's keys in its order, recursively; list items and value types are compared where the
    golden has them (a hand-made model may hold fewer variants than a cluster printed, or other types
    for values the cluster left null, or null where the cluster had a value)."""
    if got == "null":
        return True
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return False
        keys = [k for k in want if k != "<addr>"]
        got_keys = [k for k in got if k != "<addr>"]
        if keys != got_keys and not (set(want) & {"<addr>"} or _named_map(want)):
            return False
        return all(_same_keys(got[k], want[k]) for k in keys if k in got)
    if isinstance(want, list):
        if not isinstance(got, list):
            return False
        return not want or all(any(_same_keys(g, w) for w in want) for g in got)
    return True


def _named_map(want: dict) -> bool:
    """A map keyed by names the run chose (clusters, brokers, broker ids): the keys are data, not the shape."""
    if all(k.isdigit() for k in want):
        return True
    return all(isinstance(v, list | dict) for v in want.values()) and len({type(v) for v in want.values()}) == 1
