"""Grouping a window operator's calls for spilling, and zipping their spilled results.

Calls without one PARTITION BY key common to all of them are spilled in *groups*: calls
that share at least one PARTITION BY expression (:func:`partition_groups_of_calls`). Each
group's results are computed and put back into input order on their own, as one run per
group; :func:`zip_runs` then walks the input rows' run and every group's run side by side
(all in input order, with different batch boundaries) and joins them column-wise.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from flowsql.planner.expressions import Expr, WindowCall
from flowsql.runtime.spill.spill_run import SpillRun


def partition_groups_of_calls(calls: Sequence[WindowCall]
                              ) -> list[tuple[tuple[Expr, ...], list[int]]]:
    """The calls (by index) in groups with their common PARTITION BY expressions: each call
    joins the first group whose common keys it shares in part (the group's keys narrow to
    the shared ones), or starts a group of its own. Fewer groups mean fewer passes over
    the spilled input. A call without PARTITION BY gets a group with no keys."""
    groups: list[tuple[tuple[Expr, ...], list[int]]] = []
    for index, call in enumerate(calls):
        keys = tuple(dict.fromkeys(call.partition_by))
        for g, (common, members) in enumerate(groups):
            shared = tuple(e for e in common if e in keys)
            if shared:
                groups[g] = (shared, [*members, index])
                break
        else:
            groups.append((keys, [index]))
    return groups


class _Cursor:
    """The rows of one run, handed out ``n`` at a time across its batch boundaries."""

    def __init__(self, run: SpillRun) -> None:
        self._batches = run.read()
        self._current: pa.RecordBatch | None = None
        self._offset = 0

    def take(self, n: int) -> list[pa.Array]:
        pieces: list[pa.RecordBatch] = []
        while n > 0:
            if self._current is None or self._offset == self._current.num_rows:
                self._current = next(self._batches)
                self._offset = 0
            piece = self._current.slice(self._offset, n)
            self._offset += piece.num_rows
            n -= piece.num_rows
            pieces.append(piece)
        if len(pieces) == 1:
            return list(pieces[0].columns)
        return [pa.concat_arrays([p.column(i) for p in pieces])
                for i in range(pieces[0].num_columns)]

    def close(self) -> None:
        self._batches.close()  # type: ignore[attr-defined]


def zip_runs(rows: SpillRun, results: Sequence[SpillRun]) -> Iterator[list[pa.Array]]:
    """Per batch of ``rows``, its columns followed by the same rows' columns of every run
    in ``results`` (all runs hold the same number of rows, in the same order)."""
    cursors = [_Cursor(run) for run in results]
    try:
        for batch in rows.read():
            columns = list(batch.columns)
            for cursor in cursors:
                columns.extend(cursor.take(batch.num_rows))
            yield columns
    finally:
        for cursor in cursors:
            cursor.close()
