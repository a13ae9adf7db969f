"""An S3 warehouse for tests: moto's S3 server (its own process, on 127.0.0.1) and our proxy in front of it.

Writers write to moto directly; paimon-tail goes through the proxy (``s3wh.cli_args(proxy_options)``), so what the
proxy counts is what paimon-tail costs, and an outage the proxy plays hits paimon-tail only.
"""
from __future__ import annotations

import uuid

import pytest

from ..conftest import TestWarehouse
from ..objectstore import S3Proxy, S3Server

BUCKET = "lake"


@pytest.fixture(scope="session")
def s3():
    with S3Server() as server:
        server.create_bucket(BUCKET)
        yield server


@pytest.fixture
def proxy(s3):
    with S3Proxy(s3) as p:
        yield p


@pytest.fixture
def s3wh(s3) -> TestWarehouse:
    """A fresh warehouse in the bucket (a new prefix per test)."""
    path = f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}/warehouse"
    return TestWarehouse(path, s3.catalog_options(path))


def via(proxy: S3Proxy, wh: TestWarehouse) -> list:
    """CLI catalog arguments that reach ``wh`` through ``proxy``."""
    return wh.cli_args(proxy.catalog_options(wh.path))
