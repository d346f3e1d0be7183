"""WHERE-style evaluation of a conjunction in order, each conjunct on the rows the earlier
ones kept.

``a AND b`` as an expression evaluates both sides on every row (Kleene logic needs both
where ``a`` is NULL). Under WHERE, NULL counts as false, so a row that fails ``a`` is gone
whatever ``b`` says: ``b`` only needs the surviving rows. That matters when ``b`` calls an
expensive user-defined function -- the optimizer's ``order_predicates`` rule puts cheap,
selective conjuncts first exactly so that the expensive ones see few rows. Filtering the
batch between conjuncts costs a copy, so it is done only before a conjunct that calls a
user-defined function; built-in conjuncts are combined over the whole batch as before.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.expressions import Expr, UdfCall, conjuncts, walk

Mask = Callable[[pa.RecordBatch], pa.Array]


def calls_user_function(expr: Expr) -> bool:
    return any(isinstance(e, UdfCall) for e in walk(expr))


def needs_ordered_evaluation(expr: Expr) -> bool:
    """Whether ``expr`` is a conjunction with a user-defined call after its first conjunct."""
    parts = conjuncts(expr)
    return len(parts) > 1 and any(calls_user_function(p) for p in parts[1:])


def ordered_conjunction(parts: list[Expr], masks: list[Mask]) -> Mask:
    """A NULL-free mask of ``AND parts`` evaluated in order; ``masks[i]`` is the NULL-free
    mask of ``parts[i]``. Consecutive built-in conjuncts share one pass over the same rows;
    a conjunct calling a user-defined function runs on the rows kept so far."""
    groups: list[list[Mask]] = []
    for i, (part, mask) in enumerate(zip(parts, masks)):
        if i == 0 or calls_user_function(part) or calls_user_function(parts[i - 1]):
            groups.append([mask])
        else:
            groups[-1].append(mask)

    def evaluate(batch: pa.RecordBatch) -> pa.Array:
        rows = np.arange(batch.num_rows)
        current = batch
        for group in groups:
            if not current.num_rows:
                break
            keep = group[0](current)
            for mask in group[1:]:
                keep = pc.and_(keep, mask(current))
            kept = np.flatnonzero(keep.to_numpy(zero_copy_only=False))
            if len(kept) < current.num_rows:
                rows = rows[kept]
                current = current.take(pa.array(kept))
        result = np.zeros(batch.num_rows, dtype=bool)
        result[rows] = True
        return pa.array(result)

    return evaluate
