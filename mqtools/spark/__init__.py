"""mq on Spark: the `rocketmq` data source and the jobs behind `mq spark-load`.

pyspark is imported only when a function here needs it, so `import mqtools.spark` stays cheap and mq
runs without the `spark` extra.
"""

from __future__ import annotations

import os
import sys
from typing import Any

SPARK_EXTRA = "pyspark>=4.2 (pip install 'mqtools[spark]')"
PYTHON_CONF = "spark.pyspark.python"


def register(spark: Any) -> None:
    """Register the `rocketmq` data source with a SparkSession: `spark.read.format("rocketmq")`.

    The source's Python workers need mqtools and pyarrow, which live where this driver's Python
    does. Spark starts them with PYSPARK_PYTHON, else the system `python3`; a script run with a
    venv's python without activating the venv would fail inside a Spark stack trace with "No module
    named 'pyarrow'". So where the user chose no interpreter and the workers are local, they run this
    one; spark.pyspark.python, which pyspark reads only under spark-submit, is honoured here too.
    """
    from mqtools.spark.source import RocketMQDataSource

    _choose_worker_python(spark)
    spark.dataSource.register(RocketMQDataSource)


def _choose_worker_python(spark: Any) -> None:
    from pyspark.sql import SparkSession

    if not isinstance(spark, SparkSession):
        return  # a Spark Connect session: the server runs its own Python workers
    context = spark.sparkContext
    if os.environ.get("PYSPARK_PYTHON"):
        return
    chosen = context.getConf().get(PYTHON_CONF)
    if chosen:
        context.pythonExec = chosen
    elif context.master.startswith("local"):
        context.pythonExec = sys.executable
