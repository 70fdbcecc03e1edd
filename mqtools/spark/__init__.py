"""mq on Spark: the `rocketmq` data source and the jobs behind `mq spark-load`.

pyspark is imported only when a function here needs it, so `import mqtools.spark` stays cheap and mq
runs without the `spark` extra.
"""

from __future__ import annotations

from typing import Any

SPARK_EXTRA = "pyspark>=4.2 (pip install 'mqtools[spark]')"


def register(spark: Any) -> None:
    """Register the `rocketmq` data source with a SparkSession: `spark.read.format("rocketmq")`."""
    from mqtools.spark.source import RocketMQDataSource

    spark.dataSource.register(RocketMQDataSource)
