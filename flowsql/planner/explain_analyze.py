"""EXPLAIN ANALYZE: the physical plan beside what one run of it measured.

Per operator: the optimizer's estimated rows, the rows the operator actually emitted, the
q-error of the estimate, the operator's own time and, when it spilled to disk under
``execution.memory-budget``, the bytes it spilled. The figures are data first
(:func:`analysis_table`, which ``Result.analysis`` carries) and text second
(:func:`explain_analyze`, rendered from that table), so tests and benchmarks read the same
numbers a person sees.

Conventions a reader must know:

* **actual rows** are the rows an operator emitted, summed over its subtasks at
  parallelism > 1. An exchange moves its input's rows and reports exactly those: a
  broadcast's copies are not counted, and a forward exchange (chained away, never run)
  still shows its input's rows.
* **q-error** is ``max(est / act, act / est)`` with both clamped to at least 1, so an
  empty result estimated at 0.3 rows is exact and the figure is symmetric: 10 means off by
  a factor of 10 in either direction.
* **time** is the operator's own time: wall time spent inside its hooks (open, per-batch
  work, end of input, close), excluding the time its inputs took to produce their batches.
  At parallelism > 1 it is the slowest subtask's. For an exchange it is the receiving
  side's wait for batches from the stage that feeds it, which overlaps that stage's work.
* **spilled** is the size on disk of every spill file the operator wrote (summed over its
  subtasks; a row merged in several passes counts once per pass) and the number of files
  (runs); shown only for operators that spilled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa

from flowsql.planner.explain import INDENT, describe_physical
from flowsql.planner.operator_ids import node_operator_ids
from flowsql.planner.physical import ExchangeExec, PhysicalPlan

__all__ = ["ANALYSIS_SCHEMA", "OperatorActuals", "analysis_table", "explain_analyze",
           "q_error"]


@dataclass(frozen=True)
class OperatorActuals:
    """What a run measured of one operator: rows emitted (summed over subtasks), own
    seconds (the slowest subtask's) and spill files written (bytes and runs, summed)."""

    rows: int
    seconds: float
    spilled_bytes: int = 0
    spilled_runs: int = 0


#: the columns of ``Result.analysis``, one row per physical plan node in pre-order
ANALYSIS_SCHEMA = pa.schema([
    pa.field("operator", pa.int64(), nullable=False),   # pre-order position, from 0
    pa.field("depth", pa.int64(), nullable=False),      # 0 for the root
    pa.field("node", pa.string(), nullable=False),      # physical node type, e.g. HashJoinExec
    pa.field("description", pa.string(), nullable=False),  # the EXPLAIN line, no estimate
    pa.field("estimated_rows", pa.float64(), nullable=False),
    pa.field("actual_rows", pa.int64()),                # null: never executed
    pa.field("q_error", pa.float64()),                  # null: never executed
    pa.field("seconds", pa.float64()),                  # own time; null: never executed
    pa.field("operator_id", pa.string(), nullable=False),
    pa.field("spilled_bytes", pa.int64()),              # on disk; null: never executed
    pa.field("spilled_runs", pa.int64()),               # spill files; null: never executed
])


def q_error(estimated: float, actual: float) -> float:
    """``max(est / act, act / est)`` with both taken as at least 1 (see module doc)."""
    est, act = max(float(estimated), 1.0), max(float(actual), 1.0)
    return max(est / act, act / est)


def analysis_table(plan: PhysicalPlan, actuals: Mapping[str, OperatorActuals]) -> pa.Table:
    """One row per node of ``plan`` in pre-order (see ``ANALYSIS_SCHEMA``); ``actuals`` is
    keyed by operator id (``planner.operator_ids``), which names a node identically in
    every process, so figures measured by parallel subtasks find their node."""
    ids = node_operator_ids(plan)
    columns: dict[str, list[object]] = {f.name: [] for f in ANALYSIS_SCHEMA}

    def visit(node: PhysicalPlan, depth: int) -> OperatorActuals | None:
        row = len(columns["operator"])
        for name, value in (("operator", row), ("depth", depth),
                            ("node", type(node).__name__),
                            ("description", describe_physical(node)),
                            ("estimated_rows", float(node.est_rows)),
                            ("operator_id", ids[id(node)])):
            columns[name].append(value)
        for name in ("actual_rows", "q_error", "seconds", "spilled_bytes", "spilled_runs"):
            columns[name].append(None)
        below = [visit(child, depth + 1) for child in node.inputs]
        measured = actuals.get(ids[id(node)])
        if isinstance(node, ExchangeExec) and below[0] is not None:
            seconds = measured.seconds if measured is not None else 0.0
            measured = OperatorActuals(below[0].rows, seconds,
                                       measured.spilled_bytes if measured else 0,
                                       measured.spilled_runs if measured else 0)
        if measured is not None:
            columns["actual_rows"][row] = measured.rows
            columns["q_error"][row] = q_error(node.est_rows, measured.rows)
            columns["seconds"][row] = measured.seconds
            columns["spilled_bytes"][row] = measured.spilled_bytes
            columns["spilled_runs"][row] = measured.spilled_runs
        return measured

    visit(plan, 0)
    return pa.table(columns, schema=ANALYSIS_SCHEMA)


def explain_analyze(analysis: pa.Table, elapsed_seconds: float, parallelism: int) -> str:
    """The analyzed plan as text: each node's EXPLAIN line followed by its figures, then
    the total wall time of the run."""
    lines = ["== Physical Plan (analyzed) =="]
    for row in analysis.to_pylist():
        if row["actual_rows"] is None:
            figures = "(never executed)"
        else:
            figures = (f"actual={row['actual_rows']} q-error={row['q_error']:.2f} "
                       f"time={_duration(row['seconds'])}")
            if row["spilled_bytes"]:
                figures += (f" spilled={_size(row['spilled_bytes'])} in "
                            f"{row['spilled_runs']} run{'s' if row['spilled_runs'] != 1 else ''}")
        lines.append(f"{INDENT * row['depth']}{row['description']} "
                     f"rows=~{round(row['estimated_rows'])} {figures}")
    lines += ["", f"Total: {_duration(elapsed_seconds)} at parallelism {parallelism}"]
    return "\n".join(lines)


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f}{unit}"
    return f"{nbytes}B"


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.1f}ms" if seconds < 10 else f"{seconds:.2f}s"
