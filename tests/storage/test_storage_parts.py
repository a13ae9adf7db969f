"""The storage pieces on their own, against the real S3 server and proxy: the SigV4 client (checked against
botocore's signer and against moto checking signatures), error diagnosis of real failures, the retry policy
through a real outage, and Spark's lower-cased option keys."""
from __future__ import annotations

import hashlib
import threading
import time

import pyarrow.fs as pafs
import pytest

from paimon_tail.spark.source_options import canonical_option_key, catalog_options
from paimon_tail.storage.diagnosis import StorageError, StorageUnavailable, diagnose
from paimon_tail.storage.retry import StorageRetry
from paimon_tail.storage.s3 import S3Client, S3Config, config_from_options, sign

from tests.objectstore import REGION, S3Proxy, S3Server, _free_port


@pytest.mark.parametrize("token", [None, "session/token+="])
@pytest.mark.parametrize("method,body", [("GET", b""), ("PUT", b'{"nextSnapshot": 7}')])
def test_signature_matches_botocore(token, method, body):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    path = "/lake/wh/db.db/t/dt%3D2026-11-23/bucket-0/data-1.parquet"
    payload = hashlib.sha256(body).hexdigest()
    request = AWSRequest(method=method, url="http://127.0.0.1:9000" + path, data=body,
                         headers={"x-amz-content-sha256": payload})
    S3SigV4Auth(Credentials("AKID", "SECRET/KEY", token), "s3", "eu-west-1").add_auth(request)
    import datetime

    now = datetime.datetime.strptime(request.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(
        tzinfo=datetime.timezone.utc)
    ours = sign(S3Config("http://127.0.0.1:9000", "eu-west-1", "AKID", "SECRET/KEY", token, True), method,
                "127.0.0.1:9000", path, payload, now)
    assert ours["authorization"] == request.headers["Authorization"]


def test_client_against_a_signature_checking_server():
    with S3Server(auth=True) as s3:
        s3.create_bucket("lake")
        options = s3.catalog_options("s3://lake/wh")
        client = S3Client(config_from_options(options, environ={}))
        client.put("lake", "a/b=1/x.json", b'{"x": 1}')
        assert client.get("lake", "a/b=1/x.json") == b'{"x": 1}'
        assert client.get("lake", "a/missing") is None
        with pytest.raises(OSError, match="NO_SUCH_BUCKET"):
            client.get("no-such-lake", "x")
        bad = S3Client(config_from_options(dict(options, **{"fs.s3.accessKeySecret": "wrong"}), environ={}))
        with pytest.raises(OSError) as e:
            bad.get("lake", "a/b=1/x.json")
        assert "check the secret key" in diagnose(e.value).message  # the error body names it; HEAD has none


def test_diagnose_names_real_failures():
    def failure(endpoint: str, fn) -> BaseException:
        fs = pafs.S3FileSystem(endpoint_override=endpoint, access_key="k", secret_key="s", region=REGION,
                               force_virtual_addressing=False, connect_timeout=2, request_timeout=5,
                               retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1))
        with pytest.raises(OSError) as e:
            fn(fs)
        return e.value

    with S3Server() as s3:
        refused = diagnose(failure(f"http://127.0.0.1:{_free_port()}", lambda fs: fs.open_input_file("lake/x")))
        assert refused.transient and "connection refused" in refused.message
        tls = diagnose(failure(s3.endpoint[len("http://"):], lambda fs: fs.open_input_file("lake/x")))
        assert not tls.transient and "http://HOST:PORT" in tls.message
        nobucket = diagnose(failure(s3.endpoint, lambda fs: fs.get_file_info(pafs.FileSelector("nolake/wh"))))
        assert not nobucket.transient and "bucket nolake does not exist" in nobucket.message
    assert diagnose(ValueError("not storage")) is None


def test_retry_waits_out_an_outage_and_reports_it():
    with S3Server() as s3, S3Proxy(s3) as proxy:
        s3.create_bucket("lake")
        s3.client().put_object(Bucket="lake", Key="k", Body=b"v")
        fs = pafs.S3FileSystem(endpoint_override=proxy.endpoint, access_key="k", secret_key="s", region=REGION,
                               force_virtual_addressing=False, connect_timeout=1, request_timeout=2,
                               retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1))
        retry = StorageRetry(proxy.endpoint, timeout=None, max_delay=0.3)
        proxy.go_down("refuse")
        seen = []
        threading.Timer(1.5, lambda: (seen.append(retry.health.outage), proxy.come_back())).start()
        assert retry.call_sync(lambda: fs.open_input_file("lake/k").read()) == b"v"
        assert seen[0] is not None and "connection refused" in seen[0].describe()
        assert retry.health.outage is None  # cleared by the first success
        proxy.go_down("error")  # 503s: transient too, and a timeout ends the wait
        try:
            started = time.monotonic()
            with pytest.raises(StorageUnavailable, match="storage unreachable for 1 s"):
                StorageRetry(proxy.endpoint, timeout=1.0, max_delay=0.2).call_sync(
                    lambda: fs.open_input_file("lake/k").read())
            assert time.monotonic() - started < 10
        finally:
            proxy.come_back()
        with pytest.raises(StorageError, match="TLS handshake"):  # permanent: raised at once
            bad = pafs.S3FileSystem(endpoint_override=proxy.endpoint[len("http://"):], access_key="k",
                                    secret_key="s", region=REGION,
                                    retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1))
            StorageRetry(proxy.endpoint, timeout=None).call_sync(lambda: bad.open_input_file("lake/k"))


def test_spark_lower_cased_keys_get_pypaimon_spelling_back():
    assert canonical_option_key("fs.s3.accesskeyid") == "fs.s3.accessKeyId"
    assert canonical_option_key("fs.oss.accesskeysecret") == "fs.oss.accessKeySecret"
    assert canonical_option_key("fs.s3.endpoint") == "fs.s3.endpoint"
    spark_style = {"warehouse": "s3://lake/wh", "catalog.fs.s3.accesskeyid": "AK", "catalog.fs.s3.accesskeysecret": "S"}
    opts = catalog_options(spark_style)
    assert opts["fs.s3.accessKeyId"] == "AK" and opts["fs.s3.accessKeySecret"] == "S"
