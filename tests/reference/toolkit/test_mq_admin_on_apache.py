"""`mq admin` on Apache RocketMQ 4.9.7's 2m-2s SYNC cluster, with Apache's mqadmin 4.9.8 as the oracle.

Every reading command of mq's dialect runs with -o table and -o json (the document valid against its
shipped schema); every reading command of the mqadmin dialect prints what Apache's mqadmin prints for
the same cluster at nearly the same moment (catalogue.normalise: addresses, times, ids and rates aside).
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from adminsupport import mq
from catalogue import MQADMIN_READS, READS, fill, normalise
from mqadminbatch import MqadminBatch
from tkworld import World

from mqtools.common.presentation import load_schema

pytestmark = pytest.mark.integration


def test_every_reading_command_answers_on_apache(worlds: dict[str, World]) -> None:
    """Exit 0, no stack trace, at most one hint line on stderr, and JSON valid against its schema."""
    world = worlds["apache"]
    failures = []
    for name, template in READS.items():
        args = fill(template, world.values)
        for output in ("table", "json"):
            result = mq("admin", *args, "-o", output, namesrv=world.namesrv, timeout=90)
            problem = None
            if result.returncode != 0:
                problem = f"exit {result.returncode}: {result.stderr.strip()[-300:]}"
            elif "Traceback" in result.stderr or result.stderr.count("\n") > 1:
                problem = f"stderr: {result.stderr.strip()[-300:]}"
            elif output == "json":
                doc = json.loads(result.stdout)
                try:
                    jsonschema.validate(doc, load_schema(doc["kind"]))
                except jsonschema.ValidationError as exc:
                    problem = f"schema {doc['kind']}: {exc.message}"
            if problem:
                failures.append(f"{name} -o {output}: {problem}")
    assert not failures, "\n".join(failures)


def test_the_mqadmin_dialect_prints_what_apaches_mqadmin_prints(worlds: dict[str, World],
                                                                 mqadmin: MqadminBatch) -> None:
    world = worlds["apache"]
    rows, differ = [], []
    for name, template in MQADMIN_READS.items():
        args = fill(template, world.values)
        theirs = mqadmin.run(*args, "-n", world.namesrv)
        ours = mq("admin", *args, namesrv=world.namesrv, timeout=90)
        same = normalise(theirs.out) == normalise(ours.stdout)
        rows.append(f"{name:<24} {'same' if same else 'differs'}")
        if not same:
            differ.append(f"--- {name}\nApache:\n{theirs.out}{theirs.err[-500:]}\nmq (exit {ours.returncode}):\n"
                          f"{ours.stdout}{ours.stderr}")
    print("\n".join(rows))
    assert not differ, "\n".join(differ)
