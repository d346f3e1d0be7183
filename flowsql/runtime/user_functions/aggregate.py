"""Calling a user-defined aggregate once per group.

The contract (Flink's vectorized aggregate over Arrow instead of pandas): the function is
called once per group with one ``pyarrow.Array`` per argument holding all of the group's
rows (in input order within what the operator saw), and returns the group's value. It is
never called per row. The operators gather each group's rows first: ``call_per_group``
takes the arguments already arranged group after group (``offsets[g]:offsets[g + 1]`` are
group ``g``'s rows), so gathering is one ``take`` per argument, not one per group.

A class-form aggregate (``planner.udf_accumulator``) is run the same way, one group at a
time: unsplit, ``accumulate`` over all of the group's rows then ``get_value``; as the
PARTIAL step of a split aggregate, ``accumulate`` and the accumulator as JSON text; as the
FINAL step, its argument is the partial accumulators (JSON text) of the group, which are
merged before ``get_value``.

A group on which the function raises gives an error naming the function and the group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from flowsql.planner.udf import FINAL, PARTIAL, UserFunction
from flowsql.planner.udf_loading import import_function
from flowsql.runtime.user_functions.accumulator import UserAccumulator
from flowsql.runtime.user_functions.results import UserFunctionError, as_result_scalar

__all__ = ["call_per_group", "group_rows"]


def call_per_group(function: UserFunction, args: Sequence[pa.Array], offsets: np.ndarray,
                   describe_group: Callable[[int], str] | None = None) -> pa.Array:
    """One result per group: ``function(*[a[offsets[g]:offsets[g+1]] for a in args])``
    for each group ``g`` (``describe_group(g)`` says which group, for errors)."""
    if function.accumulator:
        return _call_accumulator(function, args, offsets, describe_group)
    code = import_function(function.path)
    values: list[pa.Scalar] = []
    for group in range(len(offsets) - 1):
        start, stop = int(offsets[group]), int(offsets[group + 1])
        arrays = [a.slice(start, stop - start) for a in args]
        try:
            result = code(*arrays)
        except Exception as e:
            where = describe_group(group) if describe_group is not None else f"group {group}"
            raise UserFunctionError(f"aggregate function {function.name} failed on {where} "
                                    f"({stop - start} rows): {type(e).__name__}: {e}") \
                from None
        values.append(as_result_scalar(function, result))
    assert function.result_type is not None
    return pa.array([v.as_py() for v in values], function.result_type)


def _call_accumulator(function: UserFunction, args: Sequence[pa.Array], offsets: np.ndarray,
                      describe_group: Callable[[int], str] | None) -> pa.Array:
    """``call_per_group`` of a class-form aggregate, by ``function.step``."""
    calls = UserAccumulator(function)
    if function.step == FINAL:  # the one argument: the group's partial accumulators
        partials = args[0].to_pylist()
    out: list[Any] = []
    for group in range(len(offsets) - 1):
        start, stop = int(offsets[group]), int(offsets[group + 1])

        def where(group: int = group) -> str:
            return describe_group(group) if describe_group is not None else f"group {group}"

        acc = calls.create(where)
        if function.step == FINAL:
            for text in partials[start:stop]:
                if text is not None:
                    acc = calls.merge(acc, calls.decode(text), where)
        elif stop > start:  # accumulate is never called without rows
            acc = calls.accumulate(acc, [a.slice(start, stop - start) for a in args], where)
        out.append(calls.encode(acc, where) if function.step == PARTIAL
                   else calls.value(acc, where).as_py())
    if function.step == PARTIAL:
        return pa.array(out, pa.string())
    assert function.result_type is not None
    return pa.array(out, function.result_type)


def group_rows(row_lists: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """From a list column of row indices per group (Acero's ``list`` aggregate over a row
    number): the row indices in group order, and the offsets of each group among them."""
    if isinstance(row_lists, pa.ChunkedArray):
        row_lists = row_lists.combine_chunks()
    assert isinstance(row_lists, pa.ListArray | pa.LargeListArray)
    lengths = pa.compute.list_value_length(row_lists).fill_null(0).to_numpy()
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return row_lists.flatten(), offsets
