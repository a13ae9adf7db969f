"""The Spark data source on an S3 warehouse (moto's S3 server checking signatures, behind our proxy).

Spark lower-cases data source option keys: ``catalog.fs.s3.accessKeyId`` arrives as ``…accesskeyid``, which
pypaimon would ignore (falling back to other credentials, here none: access denied). The source restores
pypaimon's spelling, so the keys a user writes work.
"""
from __future__ import annotations

import pyarrow as pa
import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

try:
    import pyspark.sql  # noqa: F401
except ImportError as e:  # pragma: no cover
    pytest.skip(f"!!! PySpark is not installed ({e}): the Spark S3 tests DID NOT RUN", allow_module_level=True)

from pypaimon import CatalogFactory, Schema

from tests.objectstore import S3Proxy, S3Server
from tests.spark.conftest import local_spark

KV = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])


@pytest.fixture(scope="module")
def store():
    with S3Server(auth=True) as s3, S3Proxy(s3, latency=0.005) as proxy:
        s3.create_bucket("lake")
        cat = CatalogFactory.create(s3.catalog_options("s3://lake/wh"))
        cat.create_database("db", True)
        cat.create_table("db.kv", Schema.from_pyarrow_schema(KV, primary_keys=["id"], options={"bucket": "2"}), True)
        table = cat.get_table("db.kv")
        for c in range(3):
            wb = table.new_batch_write_builder()
            w, cm = wb.new_write(), wb.new_commit()
            w.write_arrow(pa.table({"id": pa.array(range(c * 10, c * 10 + 10), pa.int64()),
                                    "name": [f"n{c}-{i}" for i in range(10)]}, schema=KV))
            cm.commit(w.prepare_commit())
            w.close()
            cm.close()
        rb = table.new_read_builder()
        expected = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist(), key=lambda r: r["id"])
        yield proxy, expected


@pytest.fixture(scope="module")
def spark():
    yield from local_spark("paimon-tail-s3-tests")


def _reader(spark, proxy, kind: str = "read"):
    r = getattr(spark, kind).format("paimon").option("table", "db.kv")
    for key, value in proxy.catalog_options("s3://lake/wh").items():
        r = r.option("warehouse" if key == "warehouse" else f"catalog.{key}", value)
    return r


def test_batch_read_on_s3_with_camel_case_credentials(spark, store):
    proxy, expected = store
    rows = [r.asDict() for r in _reader(spark, proxy).load().orderBy("id").collect()]
    assert rows == expected


def test_stream_available_now_on_s3(spark, store, tmp_path):
    proxy, expected = store
    out = str(tmp_path / "out")
    q = (_reader(spark, proxy, "readStream").option("from", "earliest").load().writeStream.format("parquet")
         .option("path", out).option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None
    got = sorted(spark.read.parquet(out).select("id", "name").collect(), key=lambda r: r["id"])
    assert [r.asDict() for r in got] == expected
