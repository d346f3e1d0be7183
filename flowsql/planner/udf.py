"""User-defined functions as the planner sees them: a name, where the code lives, what it
returns, and the hints the optimizer may use.

A function is referred to by the import path of a Python callable (``'pkg.module.fn'``):
the session process and every worker process import it by that path, so a plan that
calls it stays plain data (nothing is pickled) and a worker runs exactly the code the
path names. The planner never runs the function; it reads only this description.

Hints (all optional; EXPLAIN reports which ones a plan used):

* ``deterministic``: the same arguments always give the same result. A non-deterministic
  call is never duplicated, reordered with other predicates, or folded.
* ``selectivity``: the fraction of rows for which a boolean function is true.
* ``cost_per_row``: the cost of one call relative to a built-in comparison (1.0).
* ``rows_per_call``: rows a table function returns per input row, on average.
* ``monotonic``: the result never decreases when the (first) argument increases.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

SCALAR, TABLE, AGGREGATE = "scalar", "table", "aggregate"
#: the steps of a split class-form aggregate (``UserFunction.step``): ``partial`` turns
#: rows into accumulators, ``final`` merges accumulators and gives the value
PARTIAL, FINAL = "partial", "final"

#: what the optimizer assumes when a hint is absent
DEFAULT_SELECTIVITY = 0.5
DEFAULT_COST_PER_ROW = 10.0
DEFAULT_ROWS_PER_CALL = 1.0


@dataclass(frozen=True)
class FunctionHints:
    """Optimizer hints of a user-defined function; None: not given (the default applies)."""

    deterministic: bool = True
    selectivity: float | None = None
    cost_per_row: float | None = None
    rows_per_call: float | None = None
    monotonic: bool = False


@dataclass(frozen=True)
class UserFunction:
    """A registered user-defined function.

    ``kind`` is scalar, table or aggregate. ``result_type`` is the SQL result of a scalar or
    aggregate function; ``result_fields`` the columns (name, type) a table function returns.
    ``arg_types`` are the declared argument types (None: whatever the call passes).
    ``temporary``: CREATE TEMPORARY FUNCTION (kept for the session only, as in Flink).

    An aggregate in the class form (``planner.udf_accumulator``) has ``accumulator`` set;
    ``mergeable`` / ``retractable`` say whether it has ``merge`` / ``retract``, which is
    what lets the optimizer split it into partial and final steps and a streaming GROUP
    BY feed it a changelog. ``step`` is set only on the calls of a split aggregate
    (PARTIAL or FINAL); the registered function never has one.
    """

    name: str
    path: str
    kind: str = SCALAR
    result_type: pa.DataType | None = None
    result_fields: tuple[tuple[str, pa.DataType], ...] = ()
    arg_types: tuple[pa.DataType, ...] | None = None
    hints: FunctionHints = FunctionHints()
    temporary: bool = False
    accumulator: bool = False
    mergeable: bool = False
    retractable: bool = False
    step: str = ""
