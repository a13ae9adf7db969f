"""The registration's conditional writes, the fencing of two coordinators: on S3 (moto's server: one PUT with
If-Match / If-None-Match) and on a local path (compare and rename under flock). Of writers racing from the same
version exactly one wins; a stale version always loses."""
from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from paimon_tail.atomic_file import Conflict
from paimon_tail.service.protocol import registration as regmod

from tests.conftest import TestWarehouse

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _reg(service_id: str, epoch: int, beat: int = 0) -> regmod.Registration:
    now = regmod.now_ms() + beat  # (a renewal's heartbeat differs: a local file's version is its content)
    return regmod.Registration(service_id=service_id, addresses=[f"127.0.0.1:{7000 + epoch}"], host="h", pid=1,
                               tables=["db.t"], executors=0, tls=False, auth="none", started_ms=now,
                               heartbeat_ms=now, lease_ms=10_000, epoch=epoch)


@pytest.mark.parametrize("where", ["s3", "local"])
def test_conditional_writes_fence_coordinators(where, s3wh, tmp_path):
    wh = s3wh if where == "s3" else TestWarehouse(str(tmp_path / "wh"))
    wh.create("t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    table = wh.table("t")
    reg, version = regmod.read_versioned(table)
    assert reg is None and version is None
    first = regmod.write_if(table, _reg("a", 1), None)  # created: only if absent
    with pytest.raises(Conflict):
        regmod.write_if(table, _reg("b", 1), None)  # a second creator loses
    renewed = regmod.write_if(table, _reg("a", 1, beat=1000), first)  # a renewal over its own version
    with pytest.raises(Conflict):
        regmod.write_if(table, _reg("a", 1), first)  # ... that version is gone now
    assert regmod.read(table).service_id == "a"

    # two standbys take over from the same version at once: exactly one wins
    seen, version = regmod.read_versioned(table)
    assert seen.epoch == 1
    outcomes = {}
    start = threading.Barrier(2)

    def take_over(name: str) -> None:
        start.wait()
        try:
            regmod.write_if(table, _reg(name, 2), version)
            outcomes[name] = "won"
        except Conflict:
            outcomes[name] = "lost"

    threads = [threading.Thread(target=take_over, args=(n,)) for n in ("b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(outcomes.values()) == ["lost", "won"], outcomes
    winner = next(n for n, o in outcomes.items() if o == "won")
    now = regmod.read(table)
    assert now.service_id == winner and now.epoch == 2
    with pytest.raises(Conflict):  # the deposed active's next renewal
        regmod.write_if(table, _reg("a", 1), renewed)
    regmod.remove_if_ours(table, renewed)  # not its file any more: kept
    assert regmod.read(table).service_id == winner
