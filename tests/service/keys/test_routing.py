"""Routing is Paimon's, bit for bit (values computed with Paimon Java's BinaryRow.hashCode)."""
from pypaimon.schema.data_types import AtomicType, DataField

from paimon_tail.service.keys.binary_row import java_abs
from paimon_tail.service.keys.routing import binary_row_hash, channel


def test_partition_hash_matches_java():
    s = DataField(0, "dt", AtomicType("STRING"))
    i = DataField(1, "n", AtomicType("INT"))
    assert binary_row_hash((), []) == -1670924195  # BinaryRow.EMPTY_ROW.hashCode()
    assert binary_row_hash(("2026-11-01",), [s]) == 1662768283
    assert binary_row_hash(("a-much-longer-partition-value", 7), [s, i]) == -1090329408


def test_channel_computer_java_int_semantics():
    assert channel(1662768283, 0, 3) == 1662768283 % 3
    assert channel(-1670924195, 2, 4) == (1670924195 % 4 + 2) % 4
    # Math.abs(Integer.MIN_VALUE) is negative in Java: the remainder is negative too.
    assert java_abs(-(1 << 31)) == -(1 << 31)
    assert channel(-(1 << 31), 0, 3) == -((1 << 31) % 3)
    assert channel(-(1 << 31), 5, 3) == (-((1 << 31) % 3) + 5) % 3
