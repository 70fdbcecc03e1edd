"""The toolkit checks that run on more than one Apache version: every `mq admin` reading command on a
world (exit 0, JSON valid against its schema), and mq's mqadmin dialect beside Apache's mqadmin."""

from __future__ import annotations

import json

import jsonschema
from catalogue import (
    MQADMIN_4X_ARGS,
    MQADMIN_READS,
    ORDER_FREE,
    READS,
    SAMPLED,
    SAMPLED_READS,
    as_4x,
    comparable,
    fill,
    same_lines,
)
from mqadminbatch import MqadminBatch
from support.adminsupport import mq_here
from tkworld import World

from mqtools.common.presentation import load_schema


def reading_problems(world: World) -> list[str]:
    """Each reading command of mq's dialect with -o table and -o json: exit 0, no stack trace, at most one
    hint line on stderr, and JSON valid against its schema; what broke, one line each."""
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
    return failures


def dialect_rows(world: World, mqadmin5: MqadminBatch, mqadmin4: MqadminBatch | None,
                 documented: dict[str, str]) -> tuple[list[str], list[str]]:
    """mq's mqadmin dialect against Apache's mqadmin 5.5.0 (whose layout it follows) and, where given,
    4.9.8 in its own layout (catalogue.as_4x): the table rows, and what differs without being documented."""
    rows, differ = [], []
    for name, template in MQADMIN_READS.items():
        for _ in range(SAMPLED_READS if name in SAMPLED else 1):
            verdict, report = _dialect_verdict(name, template, world, mqadmin5, mqadmin4, documented)
            if verdict != "differs":
                break
        rows.append(f"| {name} | {verdict} |")
        if report:
            differ.append(report)
    return rows, differ


def _dialect_verdict(name: str, template: list[str], world: World, mqadmin5: MqadminBatch,
                     mqadmin4: MqadminBatch | None, documented: dict[str, str]) -> tuple[str, str | None]:
    """One round of reads of one command: the verdict, and the report when it is a difference to show."""
    args = fill(template, world.values)
    five = mqadmin5.run(*args, "-n", world.namesrv)
    ours = mq_here("admin", *args, namesrv=world.namesrv)
    order = sorted if name in ORDER_FREE else list
    mine = comparable(name, ours.stdout)
    four_out = ""
    if same_lines(order(mine), order(comparable(name, five.out))):
        verdict = "same as 5.5.0"
    else:
        if mqadmin4 is not None:
            four_out = mqadmin4.run(*fill(MQADMIN_4X_ARGS.get(name, template), world.values), "-n", world.namesrv).out
        if mqadmin4 is not None and same_lines(order(as_4x(name, mine)), order(comparable(name, four_out))):
            verdict = "same as 4.9.8"
        else:
            verdict = "documented" if name in documented else "differs"
    if verdict == "differs" or (verdict.startswith("same") and name in documented):
        return verdict, (f"--- {name}: {verdict}\n5.5.0:\n{five.out}{five.err[-400:]}\n4.9.8:\n{four_out}"
                         f"\nmq (exit {ours.returncode}):\n{ours.stdout}{ours.stderr}")
    return verdict, None
