"""The floor of any Python data source in Spark: a stream of Parquet files read by pyarrow, nothing else.

``spark_bench.py`` measures ``paimon_tail`` streams against Spark's own Parquet stream, a JVM source. This source
does the least a PySpark Python data source can: an offset is a file count, a micro-batch's files are dealt over
the tasks, and each task yields ``pq.read_table(file)``'s batches. What it costs beyond Spark's Parquet stream is
PySpark's part of a Python source (the streaming source runner Spark starts for each query, which imports
pyspark; Arrow batches handed from a Python worker to the JVM), so ``paimon_tail``'s stream against this one is
what the source itself costs.

    spark.dataSource.register(PyarrowFiles)
    spark.readStream.format("pyarrow_files").option("path", directory).load()
"""
from __future__ import annotations

import os
from typing import Iterator, List

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

try:  # PySpark >= 4.2
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover
    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass


def _files(directory: str) -> List[str]:
    return sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".parquet"))


class _Files(InputPartition):
    def __init__(self, paths: List[str]) -> None:
        self.paths = paths


class _Reader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, directory: str, tasks: int) -> None:
        self.directory = directory
        self.tasks = tasks

    def initialOffset(self) -> dict:
        return {"files": 0}

    def latestOffset(self, start=None, limit=None) -> dict:
        return {"files": len(_files(self.directory))}

    def prepareForTriggerAvailableNow(self) -> None:
        pass

    def partitions(self, start: dict, end: dict):
        paths = _files(self.directory)[start["files"]:end["files"]]
        return [_Files(paths[i::self.tasks]) for i in range(self.tasks) if paths[i::self.tasks]]

    def read(self, partition: _Files) -> Iterator:
        import pyarrow.parquet as pq

        for path in partition.paths:
            yield from pq.read_table(path).to_batches(max_chunksize=65536)

    def commit(self, end: dict) -> None:
        pass


class PyarrowFiles(DataSource):
    @classmethod
    def name(cls) -> str:
        return "pyarrow_files"

    def schema(self):
        import pyarrow.parquet as pq
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(pq.read_schema(_files(self.options["path"])[0]))

    def streamReader(self, schema) -> DataSourceStreamReader:
        return _Reader(self.options["path"], int(self.options.get("tasks", 2)))


def register(spark) -> None:
    """Register the source with ``spark``; its code travels by value (the workers need not import benchmarks)."""
    import sys

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(PyarrowFiles)
