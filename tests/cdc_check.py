"""What a consumer of ``follow --format debezium|canal|maxwell`` does, written from the formats' documentation:
validate each Debezium event against the envelope Debezium documents, and fold the events of any of the three
formats into the table's state (key → row), as a replica would. Shared by tests/output/test_cdc.py and the Paimon Java
tests (tests/output/test_cdc_java.py)."""
from __future__ import annotations

import json
from typing import Dict, Iterable, List, Sequence, Tuple

import jsonschema

_ROW = {"type": ["object", "null"]}

#: The value of a Debezium change event as written by Kafka Connect's JSON converter with schemas disabled, per
#: Debezium's documentation ("Change event values"; the source block's common fields): ``op`` c/u/d/r (plus t and
#: m, truncate and message, which we never write), ``before``/``after`` row images or null, ``source`` with the
#: fields every connector has, optional ``ts_ms`` and ``transaction``.
DEBEZIUM_VALUE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Debezium change event value (payload)",
    "type": "object",
    "required": ["op", "source", "before", "after"],
    "properties": {
        "op": {"enum": ["c", "u", "d", "r", "t", "m"]},
        "before": _ROW,
        "after": _ROW,
        "ts_ms": {"type": "integer"},
        "transaction": {
            "type": ["object", "null"],
            "required": ["id", "total_order", "data_collection_order"],
            "properties": {"id": {"type": "string"}, "total_order": {"type": "integer"},
                           "data_collection_order": {"type": "integer"}},
        },
        "source": {
            "type": "object",
            "required": ["version", "connector", "name", "ts_ms", "db"],
            "properties": {
                "version": {"type": "string"},
                "connector": {"type": "string"},
                "name": {"type": "string"},
                "ts_ms": {"type": "integer"},
                "snapshot": {"enum": ["true", "last", "false", "incremental"]},
                "db": {"type": "string"},
                "sequence": {"type": ["string", "null"]},
                "table": {"type": ["string", "null"]},
            },
        },
    },
    "allOf": [
        # create and read (snapshot) events: only the new image
        {"if": {"properties": {"op": {"enum": ["c", "r"]}}},
         "then": {"properties": {"before": {"type": "null"}, "after": {"type": "object"}}}},
        # update: the new image; the old one when the source has it
        {"if": {"properties": {"op": {"const": "u"}}}, "then": {"properties": {"after": {"type": "object"}}}},
        # delete: the old image only
        {"if": {"properties": {"op": {"const": "d"}}},
         "then": {"properties": {"before": {"type": "object"}, "after": {"type": "null"}}}},
        # a snapshot read says so in source.snapshot, a change does not
        {"if": {"properties": {"op": {"const": "r"}}},
         "then": {"properties": {"source": {"properties": {"snapshot": {"enum": ["true", "last"]}}}}},
         "else": {"properties": {"source": {"properties": {"snapshot": {"const": "false"}}}}}},
    ],
}

_VALIDATOR = jsonschema.Draft202012Validator(DEBEZIUM_VALUE_SCHEMA)


def debezium_events(lines: Iterable) -> List[dict]:
    """Parse and validate Debezium lines (bytes or str); raises on the first event that breaks the schema."""
    events = []
    for line in lines:
        event = json.loads(line)
        _VALIDATOR.validate(event)
        events.append(event)
    return events


Key = Tuple


def fold(fmt: str, events: Iterable[dict], keys: Sequence[str], state: Dict[Key, dict] | None = None,
         check_before: bool = False) -> Dict:
    """Apply change events of ``fmt`` to ``state`` (key tuple → row): upsert on create/read/update, remove on
    delete. ``check_before``: an update's old image must be the row the replica holds (nothing invented)."""
    state = {} if state is None else state
    for e in events:
        if fmt == "debezium":
            op, before, after = e["op"], e["before"], e["after"]
        elif fmt == "canal":
            op = {"INSERT": "c", "UPDATE": "u", "DELETE": "d"}[e["type"]]
            (row,) = e["data"]
            before, after = (row, None) if op == "d" else (None, row)
            if op == "u":
                (old,) = e["old"]
                before = {**row, **old}
        else:  # maxwell
            op = {"insert": "c", "update": "u", "delete": "d"}[e["type"]]
            row = e["data"]
            before, after = (row, None) if op == "d" else (None, row)
            if op == "u":
                before = {**row, **e["old"]}
        if before is not None:
            if check_before and op == "u":
                assert state.get(tuple(before[k] for k in keys)) == before, f"update from a row never seen: {e}"
            state.pop(tuple(before[k] for k in keys), None)
        if after is not None:
            state[tuple(after[k] for k in keys)] = after
    return state
