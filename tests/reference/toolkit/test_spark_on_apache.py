"""Spark on Apache's cluster: the `rocketmq` data source reads an Apache topic exactly, and
`mq spark-load produce` writes to one; Apache's mqadmin counts what arrived.

The read runs as a newcomer runs it: a script started with the venv's python, the venv not activated
(PATH without its bin, no PYSPARK_PYTHON), calling `mqtools.spark.register(spark)`. Spark alone would
start the system python3 for the source's workers, which has no pyarrow and no mqtools.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mqadminbatch import MqadminBatch
from sparkjob import produces, reads_exactly
from tkworld import World

#: Apache 5.5.0 (test_toolkit_on_apache5) proves the same reads and writes in make test
pytestmark = [pytest.mark.integration, pytest.mark.soak, pytest.mark.timeout(300)]


def test_the_data_source_reads_an_apache_topic_exactly(worlds: dict[str, World], tmp_path: Path) -> None:
    reads_exactly(worlds["apache"], tmp_path)


def test_spark_load_produces_to_apache(worlds: dict[str, World], mqadmin: MqadminBatch) -> None:
    produces(worlds["apache"], mqadmin)
