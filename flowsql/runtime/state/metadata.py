"""The self-description every state snapshot table carries.

A snapshot is plain Arrow data; what it *is* travels in the table's schema metadata under
``flowsql.state`` as a small JSON object (``kind``, ``name``, ``version`` and kind-specific
fields such as ``max_parallelism``). Restore reads it back and refuses a table of another
kind, version or key-group layout, so a checkpoint written by one operator can never be
silently misread by another. JSON, never serialized Python objects: a checkpoint is data, not code.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from flowsql.errors import ExecutionError

METADATA_KEY = b"flowsql.state"
#: bumped when a snapshot layout changes incompatibly
FORMAT_VERSION = 1


def with_metadata(table: pa.Table, kind: str, name: str, **fields: Any) -> pa.Table:
    """``table`` with its state description attached (zero-copy: only the schema changes)."""
    description = {"kind": kind, "name": name, "version": FORMAT_VERSION, **fields}
    return table.replace_schema_metadata({METADATA_KEY: json.dumps(description).encode()})


def read_metadata(table: pa.Table, kind: str, name: str) -> dict[str, Any]:
    """The description of a snapshot table that must be of ``kind``; ExecutionError otherwise."""
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise ExecutionError(f"state '{name}': snapshot table carries no state metadata")
    description: dict[str, Any] = json.loads(raw)
    if description.get("kind") != kind or description.get("version") != FORMAT_VERSION:
        raise ExecutionError(
            f"state '{name}': snapshot is {description.get('kind')} v{description.get('version')}"
            f", expected {kind} v{FORMAT_VERSION}")
    return description


def check_max_parallelism(table: pa.Table, name: str, max_parallelism: int) -> None:
    """Refuse a keyed or timer snapshot written with another number of key groups.

    ``pipeline.max-parallelism`` fixes how keys map to key groups (``hash % max
    parallelism``), so it is fixed for the life of the state: restored under another value,
    every key would be looked up in the wrong key group and its state silently lost. A
    table without a recorded value (list state) has no key groups and passes."""
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        return
    written = json.loads(raw).get("max_parallelism")
    if written is not None and written != max_parallelism:
        raise ExecutionError(
            f"state '{name}' was written with pipeline.max-parallelism {written} and cannot "
            f"be restored with pipeline.max-parallelism {max_parallelism}: the number of key "
            "groups (the max parallelism) is fixed for the life of the state; restore with SET "
            f"'pipeline.max-parallelism' = '{written}'")
