"""Calling a user-defined aggregate over window frames (``f(x) OVER (...)``).

The operator gives the argument arrays sorted by (partition, order) and every row's frame
as a half-open range ``[start, end)`` of those sorted rows. Rows with the same frame (the
peers of a RANGE frame, every row of a frame spanning the whole partition) share one
result, so the function runs once per distinct frame, frames taken in order of (start,
end):

* a function-form aggregate is called with the frame's rows (zero-copy slices);
* a class-form aggregate carries its accumulator from one frame to the next: a frame
  that only grows at its end (a running frame, UNBOUNDED PRECEDING) gets the new rows
  through ``accumulate``; a frame that also moves its start (a sliding frame) retracts the
  rows that left when the class has ``retract`` and starts afresh otherwise; a frame
  that does not overlap the previous one (another partition) starts afresh.
  ``get_value`` runs once per distinct frame.

An empty frame gives the function's value over no rows. Failures name the function and
the frame's partition (``describe_row(i)`` says which partition the row of frame ``i`` is
in).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from flowsql.planner.udf import UserFunction
from flowsql.planner.udf_loading import import_function
from flowsql.runtime.user_functions.accumulator import UserAccumulator
from flowsql.runtime.user_functions.results import UserFunctionError, as_result_scalar

__all__ = ["call_per_frame"]


def call_per_frame(function: UserFunction, args: Sequence[pa.Array], start: np.ndarray,
                   end: np.ndarray, describe_row: Callable[[int], str],
                   seeds: pa.Array | None = None, accumulators: bool = False) -> pa.Array:
    """One value per frame ``i``: the aggregate over ``args[start[i]:end[i]]``.

    ``seeds`` (class form only; the streaming OVER aggregate's history) holds, per row,
    either NULL or the JSON accumulator of rows summarized into that row: a frame
    starting at such a row starts from that accumulator (the row's own arguments are not
    accumulated). With ``accumulators`` the result is each frame's accumulator as JSON
    text instead of its value."""
    n = int(max(np.max(end, initial=0), np.max(start, initial=0)))
    start = np.asarray(start, dtype=np.int64)
    end = np.maximum(np.asarray(end, dtype=np.int64), start)
    # the distinct frames, in order of where they start and end
    key = start * (n + 1) + end
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.lexsort((end[first], start[first]))
    frames = [(int(start[first[f]]), int(end[first[f]]), int(first[f])) for f in order]
    if function.accumulator:
        values = _accumulating(function, args, frames, describe_row,
                               None if seeds is None else seeds.to_pylist(), accumulators)
    else:
        values = _calling(function, args, frames, describe_row)
    by_frame: list[Any] = [None] * len(first)
    for f, value in zip(order.tolist(), values):
        by_frame[f] = value
    assert function.result_type is not None
    result = pa.array(by_frame, pa.string() if accumulators else function.result_type)
    return result.take(pa.array(np.asarray(inverse, dtype=np.int64).reshape(-1)))


def _calling(function: UserFunction, args: Sequence[pa.Array],
             frames: list[tuple[int, int, int]], describe_row: Callable[[int], str]
             ) -> list[Any]:
    code = import_function(function.path)
    values = []
    for lo, hi, row in frames:
        try:
            result = code(*[a.slice(lo, hi - lo) for a in args])
        except Exception as e:
            raise UserFunctionError(f"aggregate function {function.name} failed on the "
                                    f"window frame of {hi - lo} rows in "
                                    f"{describe_row(row)}: {type(e).__name__}: {e}") from None
        values.append(as_result_scalar(function, result).as_py())
    return values


def _accumulating(function: UserFunction, args: Sequence[pa.Array],
                  frames: list[tuple[int, int, int]], describe_row: Callable[[int], str],
                  seeds: list[str | None] | None, accumulators: bool) -> list[Any]:
    calls = UserAccumulator(function)
    values = []
    acc: Any = None
    lo0 = hi0 = -1  # the rows ``acc`` holds: [lo0, hi0)

    def rows(lo: int, hi: int) -> list[pa.Array]:
        return [a.slice(lo, hi - lo) for a in args]

    for lo, hi, row in frames:
        def where(row: int = row) -> str:
            return f"a window frame in {describe_row(row)}"

        seed = seeds[lo] if seeds is not None and lo < hi else None
        if acc is not None and lo == lo0 and hi >= hi0:
            pass  # the frame grows at its end
        elif seed is not None:  # it starts at a summary row: from its accumulator
            acc, lo0, hi0 = calls.decode(seed), lo, lo + 1
        elif acc is not None and function.retractable and lo0 < lo < hi0 <= hi:
            acc = calls.retract(acc, rows(lo0, lo), where)  # it slides
            lo0 = lo
        else:
            acc, lo0, hi0 = calls.create(where), lo, lo
        if hi > hi0:
            acc = calls.accumulate(acc, rows(hi0, hi), where)
            hi0 = hi
        values.append(calls.encode(acc, where) if accumulators
                      else calls.value(acc, where).as_py())
    return values
