"""Paimon tables in Spark through PySpark 4's Python data source API, over pypaimon (no JVM connector jar).

    import paimon_tail.spark
    paimon_tail.spark.register(spark)
    df = spark.read.format("paimon_tail").option("warehouse", "/tmp/wh").load("shop.orders")
    enriched = paimon_tail.spark.lookup_join(events, "shop.orders", on="order_id", warehouse="/tmp/wh")

The source is registered as ``paimon_tail`` and, unless a JVM source (the paimon-spark connector) already has the
name, as ``paimon`` too. Needs ``pip install 'paimon-tail[spark]'`` (PySpark >= 4.0; streaming admission control
and ``availableNow`` need >= 4.2, filter pushdown >= 4.1). See docs/spark.md.
"""
from __future__ import annotations

import warnings
from typing import Tuple

_NEED = ("the Spark data source needs PySpark 4: pip install 'paimon-tail[spark]' (from a clone: "
         "pip install -e '.[spark]')")

NAME = "paimon_tail"  # always ours
SHARED_NAME = "paimon"  # the paimon-spark connector's name, taken when it is free


class NameTakenWarning(UserWarning):
    """``paimon`` belongs to a JVM data source in this session; paimon-tail's source is ``paimon_tail`` only."""


def _taken(error: Exception) -> bool:
    text = f"{getattr(error, 'getCondition', lambda: None)() or ''} {error}"
    return "DATA_SOURCE_ALREADY_EXISTS" in text


def register(spark, *, filter_pushdown: bool = True, parallelism: int | None = None) -> Tuple[str, ...]:
    """Register the data source with ``spark`` as ``paimon_tail``, and as ``paimon`` when that name is free.

    Spark refuses a Python source under the name of a JVM one (SPARK-46522), so where the Java paimon-spark
    connector is installed ``paimon`` stays the connector's: a ``NameTakenWarning`` says so, and
    ``format("paimon_tail")`` reads and writes the same tables with the same option names. Returns the names
    registered. Also turns on ``spark.sql.python.filterPushdown.enabled`` (PySpark refuses a reader with filter
    pushdown while it is off; ``filter_pushdown=False`` keeps it off). ``parallelism`` (default: the session's
    default parallelism) is how many tasks small reads spread over.
    """
    try:
        from .source import PaimonDataSource
    except ImportError as e:  # pragma: no cover
        raise ImportError(f"{_NEED} ({e})") from e
    if filter_pushdown:
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
            parallelism = int(spark.conf.get("spark.default.parallelism", "2") or 2)
    names = []
    for name in (NAME, SHARED_NAME):
        source = type("_RegisteredPaimonDataSource", (PaimonDataSource,), {
            "_pushdown": filter_pushdown, "_parallelism": max(1, parallelism), "name": classmethod(lambda c, n=name: n),
        })
        try:
            spark.dataSource.register(source)
        except Exception as e:
            if name == SHARED_NAME and _taken(e):
                warnings.warn(
                    "the data source name 'paimon' is taken by a JVM source in this Spark session (the paimon-spark "
                    "connector?): paimon-tail's source is registered as 'paimon_tail' only; use "
                    "format('paimon_tail') with the same options", NameTakenWarning, stacklevel=2)
                continue
            raise
        names.append(name)
    return tuple(names)


def __getattr__(name: str):
    if name == "PaimonDataSource":
        from .source import PaimonDataSource

        return PaimonDataSource
    if name in ("lookup_join", "register_lookup_function"):
        from . import join

        return getattr(join, name)
    raise AttributeError(name)


__all__ = ["NAME", "NameTakenWarning", "PaimonDataSource", "SHARED_NAME", "lookup_join", "register",
           "register_lookup_function"]
