"""table_meta.py reads what pypaimon's catalog opens, without importing pypaimon's read path."""
from __future__ import annotations

import pyarrow as pa
import pytest

from paimon_tail.table_meta import TableMeta, read_local


def _same(meta: TableMeta, other: TableMeta) -> None:
    assert (meta.name, meta.schema_id, meta.fields, meta.primary_keys, meta.partition_keys, meta.options,
            meta.bucket_keys, meta.num_buckets) == \
        (other.name, other.schema_id, other.fields, other.primary_keys, other.partition_keys, other.options,
         other.bucket_keys, other.num_buckets)


def test_local_schema_equals_the_catalogs(wh):
    from pypaimon import Schema
    from pypaimon.schema.schema_change import SchemaChange
    from pypaimon.schema.data_types import AtomicType

    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                        ("d", pa.decimal128(12, 2)), ("m", pa.map_(pa.string(), pa.int32())),
                        ("l", pa.list_(pa.struct([("a", pa.int8())])))])
    wh.catalog.create_table("db.meta", Schema.from_pyarrow_schema(
        schema, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "3", "bucket-key": "id"}), False)
    wh.catalog.alter_table("db.meta", [SchemaChange.add_column("added", AtomicType("STRING"))], False)
    table = wh.catalog.get_table("db.meta")
    local = read_local("db.meta", {"warehouse": wh.path})
    assert local is not None and local.schema_id == 1 and local.field_names[-1] == "added"
    _same(local, TableMeta.of_table(table))
    assert local.bucket_keys == ["id"] and local.num_buckets == 3
    assert local.read_text("service/service-paimon-tail-lookup") is None
    assert [f.name for f in local.data_fields()] == [f.name for f in table.fields]


@pytest.mark.parametrize("options", [{"metastore": "rest", "uri": "http://127.0.0.1:1"}, {"s3.endpoint": "x"},
                                     {"warehouse": "s3://bucket/wh"}])
def test_other_catalogs_go_through_pypaimon(wh, options):
    from pypaimon import Schema

    wh.catalog.create_table("db.kv", Schema.from_pyarrow_schema(
        pa.schema([pa.field("id", pa.int64(), nullable=False)]), primary_keys=["id"], options={"bucket": "2"}), False)
    assert read_local("db.kv", {"warehouse": wh.path}) is not None
    assert read_local("db.kv", {"warehouse": f"file://{wh.path}", "metastore": "filesystem"}) is not None
    assert read_local("db.kv", dict({"warehouse": wh.path}, **options)) is None


def test_missing_tables_go_through_pypaimon(wh):
    """pypaimon then says what is missing (database or table), with the catalogue's messages."""
    assert read_local("db.nope", {"warehouse": wh.path}) is None
    assert read_local("nodb.t", {"warehouse": wh.path}) is None
    assert read_local("db.t$snapshots", {"warehouse": wh.path}) is None
