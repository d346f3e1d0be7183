"""The constants of the physical cost model, per engine, read from ``constants.json``.

Every constant is seconds per unit of work on one subtask (a row, a byte, a pair of rows),
so a cost is an estimated elapsed time. Both engines' constants are measured on the
machine that runs the queries by ``benchmarks/calibrate_cost.py``, which rewrites the
``local`` entry of the data file, or with ``--engine spark`` the ``spark`` entry: Spark's
own constants (in local mode; a query's start and each shuffle stage cost tenths of a
second), which the same model uses when the Spark backend compiles the physical plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path

from flowsql.errors import PlanError

#: the committed data file; the calibration script writes one engine's entry
CONSTANTS_FILE = Path(__file__).with_name("constants.json")


@dataclass(frozen=True)
class CostConstants:
    """Seconds per unit of work; see the module docstring."""

    #: reading one byte of a table (decoding included)
    scan_byte: float
    #: evaluating one built-in expression (a comparison, an arithmetic call) on one row;
    #: a UDF call costs ``cost_per_row`` times this
    expression_row: float
    #: passing one row through a filter or projection (besides its expressions)
    pass_row: float
    #: inserting one row into a join hash table
    hash_build_row: float
    #: probing the hash table with one row
    hash_probe_row: float
    #: emitting one joined row
    join_output_row: float
    #: one input row of a hash aggregate
    aggregate_row: float
    #: one input row of an aggregate over input sorted on its keys
    sort_aggregate_row: float
    #: one row of a sort, times log2 of the rows sorted
    sort_row_log: float
    #: one input row of a merge join (both inputs sorted)
    merge_row: float
    #: one pair of rows a nested-loop join compares
    loop_pair: float
    #: one row of a window (OVER) operator
    window_row: float
    #: one byte an exchange moves from one subtask to another (serialize, send, receive)
    network_byte: float
    #: one byte written to disk by a spill and read back
    spill_byte: float
    #: starting a job on several subtasks (deploying the stages), once per query
    parallel_job: float
    #: each stage a parallel job has (a task per subtask to start and connect)
    stage: float

    @staticmethod
    def from_mapping(values: dict[str, float]) -> CostConstants:
        names = {f.name for f in fields(CostConstants)}
        missing = names - set(values)
        if missing:
            raise PlanError(f"cost constants: missing {', '.join(sorted(missing))} in "
                            f"{CONSTANTS_FILE.name}")
        return CostConstants(**{name: float(values[name]) for name in names})


@cache
def load_constants(engine: str = "local") -> CostConstants:
    """The constants of ``engine`` (``local`` or ``spark``) from the data file."""
    table = json.loads(CONSTANTS_FILE.read_text())
    if engine not in table:
        raise PlanError(f"cost constants: no entry for engine '{engine}' in "
                        f"{CONSTANTS_FILE.name}")
    return CostConstants.from_mapping(table[engine])
