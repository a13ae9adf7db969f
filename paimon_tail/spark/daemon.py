"""A PySpark worker daemon that has paimon-tail's Spark parts imported before it forks workers.

    SparkSession.builder.config("spark.python.daemon.module", "paimon_tail.spark.daemon")

PySpark forks every Python worker from one daemon process per executor (and one for the driver's data source
planning). Each fork that runs the data source imports pypaimon's read path (pandas, polars, pyarrow.dataset:
~0.8 s), and a query uses several: the source's schema, its plan, each streaming query's offset runner, and each
task worker. Importing it once in the daemon makes those forks start with it (copy-on-write). Nothing here starts
a thread or opens a socket before the fork (gRPC is imported by lookup-join tasks after it).
"""
from __future__ import annotations

import pyspark.daemon

import paimon_tail.spark.source  # noqa: F401  (pypaimon's read path, pyarrow, the source)
import paimon_tail.spark.stream  # noqa: F401
import paimon_tail.stream.planner  # noqa: F401

if __name__ == "__main__":
    pyspark.daemon.manager()
