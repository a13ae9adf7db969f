"""Paimon tables in Spark through PySpark 4's Python data source API, over pypaimon (no JVM connector jar).

    import paimon_tail.spark
    paimon_tail.spark.register(spark)
    df = spark.read.format("paimon").option("warehouse", "/tmp/wh").load("shop.orders")

Needs ``pip install 'paimon-tail[spark]'`` (PySpark >= 4.0; streaming admission control and ``availableNow``
need >= 4.2, filter pushdown >= 4.1). See docs/spark.md.
"""
from __future__ import annotations

_NEED = "the Spark data source needs PySpark 4: pip install 'paimon-tail[spark]'"


def register(spark, *, filter_pushdown: bool = True, parallelism: int | None = None):
    """Register the ``paimon`` data source with ``spark`` (and enable Python filter pushdown for it).

    ``parallelism`` (default: the session's default parallelism) is how many tasks small reads spread over.
    """
    try:
        from .source import PaimonDataSource
    except ImportError as e:  # pragma: no cover
        raise ImportError(f"{_NEED} ({e})") from e
    if filter_pushdown:
        # PySpark refuses a reader with pushFilters while Python filter pushdown is off.
        current = spark.conf.get("spark.sql.python.filterPushdown.enabled", None)
        if current is None or current.lower() == "false":
            try:
                spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
            except Exception:  # pragma: no cover - PySpark 4.0 has no such conf
                pass
    if parallelism is None:
        try:
            parallelism = int(spark.sparkContext.defaultParallelism)
        except Exception:  # Spark Connect has no SparkContext
            parallelism = 2
    source = type("_RegisteredPaimonDataSource", (PaimonDataSource,), {
        "_pushdown": filter_pushdown, "_parallelism": max(1, parallelism),
    })
    spark.dataSource.register(source)
    return source


def __getattr__(name: str):
    if name == "PaimonDataSource":
        from .source import PaimonDataSource

        return PaimonDataSource
    raise AttributeError(name)


__all__ = ["PaimonDataSource", "register"]
