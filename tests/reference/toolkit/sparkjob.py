"""The Spark checks the toolkit runs on each Apache version: the `rocketmq` source read by a newcomer's script
(the venv's python, the venv not activated) and `mq spark-load produce`, counted by Apache's mqadmin."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from mqadminbatch import MqadminBatch
from support.adminsupport import json_of, mq
from tkworld import TOPIC, World

from mqtools.client.admin.sync import SyncMQAdmin

SCRIPT = """
import json, sys
from pyspark.sql import SparkSession
import mqtools.spark

spark = (SparkSession.builder.master("local[2]").appName("newcomer").config("spark.ui.enabled", "false")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
mqtools.spark.register(spark)
rows = (spark.read.format("rocketmq").option("namesrv", sys.argv[1]).option("topic", sys.argv[2]).load()
        .select("broker", "queue_id", "queue_offset", "keys", "tags", "body", "properties").collect())
print(json.dumps([{"broker": r.broker, "queue": r.queue_id, "offset": r.queue_offset, "keys": r.keys,
                   "tags": r.tags, "body": bytes(r.body).decode(), "properties": dict(r.properties)} for r in rows]))
spark.stop()
"""


def newcomer_env() -> dict[str, str]:
    """The environment of a shell where the venv was never activated."""
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)
    return {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "VIRTUAL_ENV")} | {"PATH": path}


def reads_exactly(world: World, tmp_path: Path) -> None:
    """The newcomer's script reads every message of the world's topic: each at the broker, queue and offset
    the Java producer was told, with its keys, tags, body and properties."""
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), world.namesrv, TOPIC], capture_output=True, text=True,
                          env=newcomer_env(), cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    with SyncMQAdmin(world.namesrv) as admin:
        stored = sum(q.max_offset - q.min_offset for q in admin.overview.topic_status(TOPIC).queues)
    assert len(rows) == stored == len(world.sent)
    sent = {e["msgId"]: e for e in world.sent}
    assert {r["properties"]["UNIQ_KEY"] for r in rows} == set(sent)
    for row in rows:
        e = sent[row["properties"]["UNIQ_KEY"]]
        assert (row["broker"], row["queue"], row["offset"]) == (e["broker"], e["queueId"], e["queueOffset"])
        assert (row["keys"], row["tags"], row["body"]) == (e["key"], "TagA", f"body-{e['i']}"), (row, e)
        assert row["properties"]["TAGS"] == "TagA" and row["properties"]["KEYS"] == e["key"]


def produces(world: World, mqadmin: MqadminBatch) -> None:
    """`mq spark-load produce` puts exactly 400 more messages on the world's topic, as Apache's mqadmin
    (the version given) counts them with topicStatus; run as a process of its own, it starts its own Spark, whose
    start-up warnings it keeps off the command's stderr."""

    def stored() -> int:
        out = mqadmin.run("topicStatus", "-n", world.namesrv, "-t", TOPIC).out
        rows = [line.split() for line in out.splitlines() if re.match(r"\S+\s+\d+\s+\d+\s+\d+", line)]
        return sum(int(r[3]) - int(r[2]) for r in rows)  # broker, queue, min offset, max offset, last updated

    before = stored()
    result = mq("spark-load", "produce", "-t", TOPIC, "--messages", "400", "--tasks", "2", "--master", "local[2]",
                "-o", "json", namesrv=world.namesrv, timeout=300)
    report = json_of(result, "SparkLoadReport")
    assert (report["messages"], report["failed"]) == (400, {})
    spark_log = [line for line in result.stderr.splitlines()  # the JVM it started logs errors only
                 if "log4j profile" in line or "default log level" in line or " WARN " in line]
    assert spark_log == [], result.stderr
    assert stored() - before == 400
