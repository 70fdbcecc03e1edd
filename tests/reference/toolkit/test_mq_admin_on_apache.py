"""`mq admin` on Apache RocketMQ 4.9.7's 2m-2s SYNC cluster, with Apache's mqadmin 4.9.8 as the oracle.

Every reading command of mq's dialect runs with -o table and -o json (the document valid against its
shipped schema); every reading command of the mqadmin dialect prints what Apache's mqadmin prints for
the same cluster at nearly the same moment (catalogue.normalise: addresses, times, ids and rates aside).
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from adminsupport import mq_here
from catalogue import MQADMIN_4X_ARGS, MQADMIN_READS, ORDER_FREE, READS, as_4x, fill, normalise, same_lines
from mqadminbatch import MqadminBatch
from tkworld import World

from mqtools.common.presentation import load_schema

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: mqadmin command -> why mq's dialect prints something else, as README's "Differences from Apache
#: RocketMQ" says. An entry whose command comes out the same fails the test: it goes.
DOCUMENTED: dict[str, str] = {}


def test_every_reading_command_answers_on_apache(worlds: dict[str, World]) -> None:
    """Exit 0, no stack trace, at most one hint line on stderr, and JSON valid against its schema."""
    world = worlds["apache"]
    failures = []
    for name, template in READS.items():
        args = fill(template, world.values)
        for output in ("table", "json"):
            result = mq_here("admin", *args, "-o", output, namesrv=world.namesrv)
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


def test_the_mqadmin_dialect_prints_what_apaches_mqadmin_prints(worlds: dict[str, World], mqadmin: MqadminBatch,
                                                                 mqadmin5: MqadminBatch) -> None:
    """mq's dialect lays its output out as mqadmin 5.x does. Against a 4.9.7 cluster, Apache's 5.5.0 mqadmin
    fails or guesses where a 4.x broker lacks what 5.x asks (topicStatus, consumerProgress, track types);
    so mq's output must equal 5.5.0's, or, in 4.9.8's layout (catalogue.as_4x), 4.9.8's."""
    world = worlds["apache"]
    rows, differ = [], []
    for name, template in MQADMIN_READS.items():
        args = fill(template, world.values)
        five = mqadmin5.run(*args, "-n", world.namesrv)
        four = mqadmin.run(*fill(MQADMIN_4X_ARGS.get(name, template), world.values), "-n", world.namesrv)
        ours = mq_here("admin", *args, namesrv=world.namesrv)
        order = sorted if name in ORDER_FREE else list
        mine = normalise(ours.stdout)
        if same_lines(order(mine), order(normalise(five.out))):
            verdict = "same as 5.5.0"
        elif same_lines(order(as_4x(name, mine)), order(normalise(four.out))):
            verdict = "same as 4.9.8"
        else:
            verdict = "documented" if name in DOCUMENTED else "differs"
        rows.append(f"| {name} | {verdict} |")
        if verdict == "differs" or (verdict.startswith("same") and name in DOCUMENTED):
            differ.append(f"--- {name}: {verdict}\n5.5.0:\n{five.out}{five.err[-400:]}\n4.9.8:\n{four.out}"
                          f"{four.err[-400:]}\nmq (exit {ours.returncode}):\n{ours.stdout}{ours.stderr}")
    print("\n| mqadmin command on Apache 4.9.7 | mq's dialect |\n|---|---|\n" + "\n".join(rows))
    assert not differ, "\n".join(differ)
