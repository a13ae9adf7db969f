"""The lookup join in Spark: ``df`` (batch or streaming) enriched from a running ``paimon-tail serve``.

    enriched = paimon_tail.spark.lookup_join(events, "shop.orders", on="order_id", warehouse="/wh")
    paimon_tail.spark.register_lookup_function(spark, "shop.orders", name="orders", warehouse="/wh")
    spark.sql("SELECT e.*, orders(e.order_id).status FROM events e")

The driver checks the join once (names, key types) against the table's schema; the tasks run ``mapInArrow``:
Arrow batches from Spark → ``LookupJoiner`` (one ``LookupClient`` per Python worker, several batches in flight,
a deadline per lookup) → Arrow batches back. Nothing but the catalog options, the plan and the security settings
travels in the closure; no table data goes through the driver.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

from ..concurrency import in_order
from ..errors import UsageError
from ..arrow_join import DEFAULT_IN_FLIGHT, DEFAULT_LOOKUP_KEYS, JoinPlan, LookupJoiner, On, table_arrow_schema
from .source_options import catalog_options

# Options of the join itself; every other option is a catalog option, spelt as the data source takes them.
_SECURITY_KEYS = ("lookup.token", "lookup.token-file", "lookup.tls-ca", "lookup.tls-cert", "lookup.tls-key")


@dataclass(frozen=True)
class ServiceAccess:
    """Where the service is found and how to talk to it: shipped to the tasks (a token travels in the closure)."""

    catalog: Tuple[Tuple[str, str], ...]
    table: str
    token: Optional[str] = None
    tls_ca: Optional[str] = None
    tls_cert: Optional[str] = None
    tls_key: Optional[str] = None

    @classmethod
    def of(cls, table: str, options: Mapping[str, Any]) -> "ServiceAccess":
        from ..service.protocol.security import Security

        o = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
        sec = Security.from_options(token_file=o.get("lookup.token-file"), tls_cert=o.get("lookup.tls-cert"),
                                    tls_key=o.get("lookup.tls-key"), tls_ca=o.get("lookup.tls-ca"),
                                    token=o.get("lookup.token"))
        catalog = catalog_options({k: v for k, v in o.items() if k not in _SECURITY_KEYS})
        return cls(tuple(sorted(catalog.items())), table, sec.token, sec.tls_ca, sec.tls_cert, sec.tls_key)

    def open(self):
        from ..catalog import CatalogConfig
        from ..service.client import LookupClient
        from ..service.protocol.security import Security

        security = Security(self.token, self.tls_cert, self.tls_key, self.tls_ca)
        return LookupClient(self.table, CatalogConfig(dict(self.catalog)), security=security)


_clients: Dict[ServiceAccess, Any] = {}
_clients_lock = threading.Lock()


def worker_client(access: ServiceAccess):
    """One ``LookupClient`` per Python worker and service (workers are reused across tasks and micro-batches)."""
    with _clients_lock:
        client = _clients.get(access)
        if client is None:
            client = _clients[access] = access.open()
    return client


def _plan(access: ServiceAccess, columns: Sequence[str], on: On, how: str, **kwargs) -> Tuple[JoinPlan, pa.Schema]:
    client = access.open()  # reads the schema only: no connection until a lookup
    try:
        plan = JoinPlan.make(client.meta, columns, on, how, **kwargs)
        return plan, table_arrow_schema(client.meta)
    finally:
        client.close_sync()


def _spark_fields(fields: List[pa.Field]):
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    struct = from_arrow_schema(pa.schema(fields))
    return struct, list(to_arrow_schema(struct, timezone="UTC"))


def lookup_join(df, table: str, on: On = None, how: str = "left", *, select: Optional[Sequence[str]] = None,
                prefix: str = "", snapshot_column: Optional[str] = None, min_snapshot: Optional[int] = None,
                timeout: float = 30.0, in_flight: int = DEFAULT_IN_FLIGHT, lookup_keys: int = DEFAULT_LOOKUP_KEYS,
                **options: Any):
    """``df`` with the columns of ``table``'s row for each row's key, looked up in a running ``paimon-tail serve``.

    ``on``: ``df``'s columns holding the primary key (default: the key's own names; a list in key order, or
    ``{key: column}``). ``how``: ``left`` keeps rows without a match (nulls), ``inner`` drops them. ``select``: the
    table columns to add (default: all but the key); ``prefix`` renames them. ``min_snapshot``: every answer
    reflects at least that snapshot (read-your-writes; lookups wait for the service up to ``timeout`` seconds).
    ``snapshot_column``: adds the snapshot the answers reflect. Each task gathers Spark's Arrow batches into
    lookups of ``lookup_keys`` keys, ``in_flight`` at a time, each within ``timeout``. ``**options``: catalog options as the data source
    takes them (``warehouse``, ``catalog.<key>``, ``config`` …) and ``lookup.token``/``lookup.token-file``/
    ``lookup.tls-ca``/``lookup.tls-cert``/``lookup.tls-key`` (default: ``PAIMON_TAIL_TOKEN`` of this process).
    Works on batch and streaming DataFrames, and from Spark Connect clients.
    """
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    access = ServiceAccess.of(table, options)
    plan, table_schema = _plan(access, df.columns, on, how, select=select, prefix=prefix,
                               snapshot_column=snapshot_column, min_snapshot=min_snapshot, timeout=timeout,
                               in_flight=in_flight, lookup_keys=lookup_keys)
    key_schema = pa.schema([table_schema.field(k) for k in plan.keys])
    plan.check_key_types(to_arrow_schema(StructType([df.schema[c] for c in plan.on]), timezone="UTC"), key_schema)
    added_struct, added_arrow = _spark_fields(plan.added_fields(table_schema))
    out = StructType(list(df.schema.fields) + list(added_struct.fields))

    def join_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        joiner = LookupJoiner(worker_client(access), plan, added_arrow)
        yield from joiner.join_batches(batches)

    return df.mapInArrow(join_partition, out)


def register_lookup_function(spark, table: str, name: Optional[str] = None, *,
                             select: Optional[Sequence[str]] = None, min_snapshot: Optional[int] = None,
                             timeout: float = 30.0, in_flight: int = DEFAULT_IN_FLIGHT, **options: Any) -> str:
    """A SQL function ``name(key columns…)`` returning ``table``'s row for the key as a struct (NULL when there is
    none): ``SELECT e.*, o.* FROM (SELECT e.*, orders(e.order_id) AS o FROM events e)``, ``WHERE o IS NOT NULL``
    for an inner join. The key values go in key order. Returns the function's name (default ``<table>_lookup``).
    Needs PySpark >= 4.1 (Arrow UDFs)."""
    try:
        from pyspark.sql.functions import arrow_udf
    except ImportError:  # pragma: no cover - PySpark 4.0
        raise UsageError("register_lookup_function needs PySpark >= 4.1 (Arrow UDFs); use lookup_join") from None
    access = ServiceAccess.of(table, options)
    name = name or table.split(".")[-1] + "_lookup"
    client = access.open()
    try:
        keys = list(client.meta.primary_keys)
        plan = JoinPlan.make(client.meta, keys, None, "left", select=select, min_snapshot=min_snapshot,
                             timeout=timeout, in_flight=in_flight)
        table_schema = table_arrow_schema(client.meta)
    finally:
        client.close_sync()
    added_struct, added_arrow = _spark_fields(plan.added_fields(table_schema))
    struct_type = pa.struct(added_arrow)
    single = len(keys) == 1

    def lookup_rows(batches) -> Iterator[pa.Array]:
        joiner = LookupJoiner(worker_client(access), plan, added_arrow)
        with ThreadPoolExecutor(plan.in_flight, thread_name_prefix="lookup-fn") as pool:
            yield from in_order(batches, lambda arrays: joiner.lookup_struct([arrays] if single else list(arrays), pool),
                                lambda p: joiner.struct_of(p, struct_type), plan.in_flight)

    # PySpark tells the iterator shape from the type hints: one key column or several
    lookup_rows.__annotations__["batches"] = Iterator[pa.Array] if single else Iterator[Tuple[(pa.Array,) * len(keys)]]
    udf = arrow_udf(lookup_rows, added_struct)
    spark.udf.register(name, udf)
    return name


__all__ = ["ServiceAccess", "lookup_join", "register_lookup_function", "worker_client"]
