"""The embedded demo: a local warehouse with live data, so a newcomer sees paimon-tail work in one command.

``shop.orders`` is a primary-key table (4 fixed buckets) receiving new orders, updates and deletes (through
Paimon's ``rowkind.field`` option, column ``op``); ``shop.events`` is an append table. A background writer
commits to both every ``interval`` seconds, and every ``compact_every`` rounds compacts both (``compact``), so the
demo is as quick after an hour as after a minute: pypaimon writes neither compactions nor manifest merges, and
without them every commit adds a data file per bucket and a manifest that every full read must open.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import os
import random
import threading
from typing import Optional

import pyarrow as pa

ORDERS = pa.schema([
    pa.field("order_id", pa.int64(), nullable=False),
    pa.field("customer", pa.string()),
    pa.field("status", pa.string()),
    pa.field("amount", pa.decimal128(10, 2)),
    pa.field("updated_at", pa.timestamp("us")),
    pa.field("op", pa.string()),
])
EVENTS = pa.schema([
    pa.field("event_id", pa.int64()),
    pa.field("order_id", pa.int64()),
    pa.field("kind", pa.string()),
    pa.field("at", pa.timestamp("us")),
])
KEPT_ORDERS = 3  # orders 1..3 are never deleted: the README's first lookup asks for them
CUSTOMERS = ["ada", "grace", "linus", "margaret", "dennis", "barbara", "ken", "frances"]
STATUSES = ["placed", "paid", "packed", "shipped", "delivered"]


def create_demo_tables(warehouse: str):
    """Create the warehouse, database ``shop`` and both tables if missing; returns the catalog."""
    from pypaimon import CatalogFactory, Schema

    os.makedirs(warehouse, exist_ok=True)
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("shop", True)
    catalog.create_table("shop.orders", Schema.from_pyarrow_schema(
        ORDERS, primary_keys=["order_id"], options={"bucket": "4", "rowkind.field": "op"},
        comment="paimon-tail demo: orders with updates and deletes"), True)
    catalog.create_table("shop.events", Schema.from_pyarrow_schema(
        EVENTS, options={"bucket": "2", "bucket-key": "order_id"}, comment="paimon-tail demo: an append table"),
        True)
    return catalog


class DemoWriter:
    """Commits a few orders (inserts, updates, deletes) and events every ``interval`` seconds, in a thread."""

    def __init__(self, warehouse: str, interval: float = 1.0, seed: Optional[int] = None,
                 compact_every: int = 60, retain: int = 120) -> None:
        catalog = create_demo_tables(warehouse)
        self.orders = catalog.get_table("shop.orders")
        self.events = catalog.get_table("shop.events")
        self.interval = interval
        self.compact_every = compact_every
        self.retain = retain  # snapshots kept per table (about two minutes at the default interval)
        self.random = random.Random(seed)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.commits = 0
        latest = self.orders.snapshot_manager().get_latest_snapshot()
        self._next_order = 1 + (latest.total_record_count if latest else 0) * 2
        self._next_event = self._next_order * 10
        self._open: dict[int, int] = {}  # order_id -> status index

    def _commit(self, table, data: pa.Table) -> None:
        builder = table.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        try:
            write.write_arrow(data)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()

    def step(self) -> None:
        """One round: a commit to each table."""
        now = _dt.datetime.now()
        r = self.random
        orders, events = [], []
        for _ in range(r.randint(2, 5)):
            oid = self._next_order
            self._next_order += 1
            self._open[oid] = 0
            orders.append({"order_id": oid, "customer": r.choice(CUSTOMERS), "status": STATUSES[0],
                           "amount": decimal.Decimal(r.randint(500, 50000)) / 100, "updated_at": now, "op": "+I"})
            events.append(("placed", oid))
        for oid in r.sample(sorted(self._open), k=min(len(self._open), r.randint(1, 3))):
            if any(o["order_id"] == oid for o in orders):
                continue
            step = self._open[oid] + 1
            if oid > KEPT_ORDERS and (step >= len(STATUSES) or r.random() < 0.08):  # archived, or cancelled
                orders.append({"order_id": oid, "customer": None, "status": None, "amount": None,
                               "updated_at": now, "op": "-D"})
                events.append(("deleted", oid))
                del self._open[oid]
                continue
            if oid <= KEPT_ORDERS and step >= len(STATUSES) - 1:
                del self._open[oid]  # delivered, and kept as it is
            else:
                self._open[oid] = step
            status = STATUSES[step]
            orders.append({"order_id": oid, "customer": r.choice(CUSTOMERS), "status": status,
                           "amount": decimal.Decimal(r.randint(500, 50000)) / 100, "updated_at": now, "op": "+U"})
            events.append((status, oid))
        rows = []
        for kind, oid in events:
            rows.append({"event_id": self._next_event, "order_id": oid, "kind": kind, "at": now})
            self._next_event += 1
        self._commit(self.orders, pa.Table.from_pylist(orders, schema=ORDERS))
        self._commit(self.events, pa.Table.from_pylist(rows, schema=EVENTS))
        self.commits += 1
        if self.compact_every and self.commits % self.compact_every == 0:
            self.compact()

    def compact(self) -> None:
        """Compact both tables and expire their old snapshots (see ``compact`` and ``expire``)."""
        for table in (self.orders, self.events):
            compact(table)
            expire(table, self.retain)

    def start(self) -> "DemoWriter":
        def loop() -> None:
            while not self._stop.is_set():
                self.step()
                self._stop.wait(self.interval)

        self._thread = threading.Thread(target=loop, name="paimon-tail-demo-writer", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def compact(table) -> bool:
    """Rewrite ``table`` as one file per bucket, with its manifests folded into one, as a COMPACT snapshot.

    The rows the table holds are written again and committed as Paimon commits a full compaction: a COMPACT
    snapshot that removes every file and adds the new ones (a primary-key table's at its highest level), which
    streaming readers rightly skip (the rows were there already); a full read and the query service see the same
    rows in fewer files. pypaimon's commit makes the new snapshot's base manifest list from every manifest of the
    latest one; here it gets one manifest with the live files instead (what Paimon's manifest full compaction
    writes). Both through the commit's own parts (``compat/adapters/folded_manifests.py``). False when another commit came
    in between (nothing is committed; the next round compacts).
    """
    from .compat.adapters.folded_manifests import commit_compacted
    from .stream.planner import num_levels

    base = table.snapshot_manager().get_latest_snapshot()
    if base is None:
        return False
    at = table.copy({"scan.snapshot-id": str(base.id)})
    read = at.new_read_builder()
    data = read.new_read().to_arrow(read.new_scan().plan().splits())
    builder = table.new_batch_write_builder()
    write, commit = builder.new_write(), builder.new_commit()
    try:
        write.write_arrow(data)
        top = num_levels(table) - 1 if table.is_primary_key_table else 0
        return commit_compacted(commit, write.prepare_commit(), base, top)
    finally:
        write.close()
        commit.close()


def expire(table, retain: int) -> None:
    """Expire all but the newest ``retain`` snapshots, as Paimon's ``snapshot.num-retained`` does, never one a
    consumer (``--consumer-id``) has still to read, with the files only they needed (``paimon_tail.expire``)."""
    from .expire import expire_snapshots

    expire_snapshots(table, retain)
