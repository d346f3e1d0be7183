"""COUNT, COUNT(*), SUM and AVG as accumulators with the interface of a class-form user
aggregate (``runtime.user_functions.accumulator.UserAccumulator``), so the streaming GROUP
BY that runs user aggregates (``changelog_user_aggregate``) computes the built-ins beside
them the same way: one vectorized ``pyarrow.compute`` call per group and batch.

Accumulators are JSON data like a user's: a count, or ``[sum, count of values]`` (the
count says when a retracted SUM is NULL again). A DECIMAL sum is kept as its text, so it
stays exact through a checkpoint.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.expressions import AggCall
from flowsql.planner.physical_streaming import BESIDE_USER_AGGREGATES

__all__ = ["ROW_ACCUMULATORS", "RowAccumulator"]

#: the built-in aggregates a RowAccumulator computes
ROW_ACCUMULATORS = BESIDE_USER_AGGREGATES

Where = Callable[[], str]


class RowAccumulator:
    """One built-in aggregate of ``ROW_ACCUMULATORS`` (never DISTINCT, no FILTER)."""

    def __init__(self, call: AggCall) -> None:
        assert call.name in ROW_ACCUMULATORS and not call.distinct
        self.name = call.name
        self.dtype = call.dtype
        self._decimal = bool(call.args) and pa.types.is_decimal(call.args[0].dtype)

    def create(self, where: Where) -> Any:
        return 0 if self.name in ("count", "count_star") else [None, 0]

    def _add(self, acc: Any, arrays: Sequence[pa.Array], sign: int) -> Any:
        if self.name == "count_star":
            return acc + sign * len(arrays[0]) if arrays else acc
        valid = pc.count(arrays[0]).as_py()
        if self.name == "count":
            return acc + sign * valid
        if not valid:
            return acc
        total = pc.sum(arrays[0]).as_py()
        total = total if sign > 0 else -total
        return [total if acc[0] is None else acc[0] + total, acc[1] + sign * valid]

    def accumulate(self, acc: Any, arrays: Sequence[pa.Array], where: Where) -> Any:
        return self._add(acc, arrays, 1)

    def retract(self, acc: Any, arrays: Sequence[pa.Array], where: Where) -> Any:
        return self._add(acc, arrays, -1)

    def value(self, acc: Any, where: Where) -> pa.Scalar:
        if self.name in ("count", "count_star"):
            return pa.scalar(acc, self.dtype)
        total, n = acc
        if not n:
            return pa.scalar(None, self.dtype)
        if self.name == "avg":
            return pa.array([float(total) / n], pa.float64()).cast(self.dtype)[0]
        return pa.scalar(total, self.dtype)

    def encode(self, acc: Any, where: Where) -> str:
        if self._decimal and isinstance(acc, list) and acc[0] is not None:
            acc = [str(acc[0]), acc[1]]
        return json.dumps(acc, separators=(",", ":"))

    def decode(self, text: str) -> Any:
        acc = json.loads(text)
        if self._decimal and isinstance(acc, list) and acc[0] is not None:
            acc[0] = decimal.Decimal(acc[0])
        return acc
