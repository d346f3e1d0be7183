"""Whether a job may start from a savepoint: the verdict for every state, before any task runs.

A job started with ``execution.savepoint.path`` (a savepoint, or a retained checkpoint of
another job) is compared with the savepoint operator by operator (operator ids:
``planner.operator_ids``) and state by state (names and Arrow schemas). Every state gets
one verdict:

============  ==========================================================================
restored      same operator id, same state, same schema
migrated      same operator id and state; columns added that the state can fill for its
              existing keys (``state.migration``), or columns dropped (needs
              ``execution.savepoint.ignore-unclaimed-state``)
new           the job has it, the savepoint does not: it starts empty
dropped       the savepoint has it, the job does not: its data is not restored (needs
              ``ignore-unclaimed-state`` unless it holds no rows)
incompatible  same operator id and state, but a column changed its type or was added
              without a value for the existing keys: never restorable
============  ==========================================================================

``judge`` is pure: it takes the declared states of the new job and the saved states of
the savepoint and returns the verdicts; ``refusal`` says why a set of verdicts cannot
start (or None). The I/O around it is in ``restore_check``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from flowsql.runtime.state.keyed_table import KEY_GROUP
from flowsql.runtime.state.metadata import METADATA_KEY
from flowsql.runtime.state.migration import compare
from flowsql.runtime.state.ttl import UPDATED_AT

RESTORED, MIGRATED, NEW, DROPPED, INCOMPATIBLE = (
    "restored", "migrated", "new", "dropped", "incompatible")


@dataclass(frozen=True)
class SavedState:
    """One state of one operator in a savepoint: its schema and rows over all subtasks."""

    schema: pa.Schema
    rows: int


@dataclass(frozen=True)
class StateVerdict:
    operator_id: str
    state: str
    verdict: str
    detail: str = ""
    #: rows the savepoint holds for it (0 for a new state)
    rows: int = 0
    #: a migration that leaves saved columns out
    drops_columns: bool = False


def judge(declared: Mapping[str, Mapping[str, pa.Schema] | None],
          saved: Mapping[str, Mapping[str, SavedState]]) -> list[StateVerdict]:
    """Verdicts for every state of ``declared`` (operator id -> state name -> the schema of
    an empty snapshot table, metadata included; None: the operator's states are not known
    before it runs -- a source or a sink, whose states are restored as saved) and every
    state ``saved`` holds (operator id -> state name -> ``SavedState``), ordered by the
    job's operators, then the savepoint's other operators."""
    verdicts: list[StateVerdict] = []
    for operator_id, states in declared.items():
        held = saved.get(operator_id, {})
        if states is None:
            verdicts += [StateVerdict(operator_id, name, RESTORED, "", s.rows)
                         for name, s in sorted(held.items())]
            if not held:
                verdicts.append(StateVerdict(operator_id, "*", NEW, "not in the savepoint"))
            continue
        for name, schema in states.items():
            if name not in held:
                verdicts.append(StateVerdict(operator_id, name, NEW, "starts empty"))
                continue
            verdicts.append(_state_verdict(operator_id, name, held[name], schema))
        verdicts += [StateVerdict(operator_id, name, DROPPED, "the operator no longer has it",
                                  s.rows)
                     for name, s in sorted(held.items()) if name not in states]
    for operator_id in sorted(set(saved) - set(declared)):
        verdicts += [StateVerdict(operator_id, name, DROPPED, "no operator of the job has "
                                  "this id", s.rows)
                     for name, s in sorted(saved[operator_id].items())]
    return verdicts


def refusal(verdicts: Sequence[StateVerdict], ignore_unclaimed: bool) -> str | None:
    """Why the job cannot start from the savepoint (None: it can)."""
    incompatible = [v for v in verdicts if v.verdict == INCOMPATIBLE]
    if incompatible:
        return ("the query's state is incompatible with the savepoint: " + "; ".join(
            f"{v.operator_id} {v.state}: {v.detail}" for v in incompatible))
    unclaimed = [v for v in verdicts if _loses_data(v)]
    if unclaimed and not ignore_unclaimed:
        return ("the savepoint holds state the query would not restore: " + "; ".join(
            f"{v.operator_id} {v.state} ({v.rows} rows): {v.detail}" for v in unclaimed)
            + ". SET 'execution.savepoint.ignore-unclaimed-state' = 'true' to start anyway "
            "without it")
    return None


def report_table(verdicts: Sequence[StateVerdict]) -> pa.Table:
    """The verdicts as a table: operator, state, verdict, rows, detail."""
    return pa.table({
        "operator": [v.operator_id for v in verdicts],
        "state": [v.state for v in verdicts],
        "verdict": [v.verdict for v in verdicts],
        "rows": pa.array([v.rows for v in verdicts], pa.int64()),
        "detail": [v.detail for v in verdicts],
    })


def report_text(verdicts: Sequence[StateVerdict]) -> str:
    """The verdicts as an aligned text table, nothing cut short (a detail can be long)."""
    rows = [("operator", "state", "verdict", "rows", "detail")] + [
        (v.operator_id, v.state, v.verdict, str(v.rows), v.detail) for v in verdicts]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [" | ".join([*(cell.ljust(w) if i != 3 else cell.rjust(w)
                           for i, (cell, w) in enumerate(zip(row[:4], widths))),
                         row[4]]).rstrip() for row in rows]
    lines.insert(1, "-+-".join(["-" * w for w in widths] + ["-" * 6]))
    return "\n".join(lines)


def _loses_data(verdict: StateVerdict) -> bool:
    if verdict.verdict == DROPPED:
        return verdict.rows > 0
    return verdict.drops_columns and verdict.rows > 0


def _state_verdict(operator_id: str, name: str, saved: SavedState,
                   declared: pa.Schema) -> StateVerdict:
    defaults = _migration_defaults(declared)
    saved_schema, declared_schema = _columns(saved.schema), _columns(declared)
    change = compare(saved_schema, declared_schema, defaults)
    if change.unchanged:
        return StateVerdict(operator_id, name, RESTORED, "", saved.rows)
    detail = change.describe(saved_schema, declared_schema, defaults)
    verdict = MIGRATED if change.compatible else INCOMPATIBLE
    return StateVerdict(operator_id, name, verdict, detail, saved.rows, bool(change.removed))


def _columns(schema: pa.Schema) -> pa.Schema:
    """The state's own columns: no key-group column, no write times (present only while
    ``table.exec.state.ttl`` is set, which may change between runs), no metadata."""
    return pa.schema([f for f in schema if f.name not in (KEY_GROUP, UPDATED_AT)])


def _migration_defaults(schema: pa.Schema) -> dict[str, Any] | None:
    raw = (schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        return None
    defaults = json.loads(raw).get("migration_defaults")
    return dict(defaults) if defaults else None
