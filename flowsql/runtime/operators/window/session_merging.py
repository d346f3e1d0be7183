"""Merging session windows: intervals of one key that overlap or touch become one.

Flink's rule (``TimeWindow.intersects``): sessions ``[s1, e1)`` and ``[s2, e2)`` of the same
key merge when ``s1 <= e2 and s2 <= e1``, so touching sessions merge too. Vectorized over
all keys at once: sort by (key, start); a row opens a new session when its key changes or
its start lies beyond the running maximum end of the rows before it (of the same key);
then one group-by merges the accumulators of each session.

Window ids: a stored session that absorbs nothing keeps its id (and its timer); every
session that is new or the result of a merge gets id NULL (the caller assigns a fresh id
and a timer) and the ids of the stored sessions it absorbed are returned, so their timers
can be deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.operators.window.accumulators import Accumulators
from flowsql.runtime.state.keyed_table import KEY_GROUP

_RUN = "__session"


@dataclass(frozen=True)
class MergedSessions:
    """``rows``: one row per session; ``retired``: ids of stored sessions merged away;
    ``dropped``: input rows of new sessions that touched no stored session (only counted
    when the caller asked to drop those)."""

    rows: pa.Table
    retired: np.ndarray
    dropped: int


def merge_sessions(stored: pa.Table, new: pa.Table, keys: list[str],
                   accumulators: Accumulators, only_into_stored: bool) -> MergedSessions:
    """Merge ``new`` sessions (window_id NULL) into ``stored`` ones (window_id set).

    With ``only_into_stored`` a session made only of new rows is dropped instead of kept:
    that is how a record whose own session is already late survives only by joining a
    session that is still open (Flink judges lateness on the merged window).
    """
    rows = pa.concat_tables([stored, new.select(stored.column_names).cast(stored.schema)])
    rows = rows.combine_chunks()
    sort_keys = [(KEY_GROUP, "ascending")] + [(k, "ascending") for k in keys]
    rows = rows.take(pc.sort_indices(rows, sort_keys + [("window_start", "ascending")]))
    n = rows.num_rows
    first_of_key = _key_changes(rows, keys)
    starts = rows.column("window_start").to_numpy()
    ends = rows.column("window_end").to_numpy()
    reach = _running_max_per_group(ends, np.cumsum(first_of_key) - 1)
    opens = first_of_key.copy()
    opens[1:] |= starts[1:] > reach[:-1]
    run = np.cumsum(opens) - 1
    runs = int(run[-1]) + 1 if n else 0
    ids = rows.column("window_id")
    is_stored = ids.is_valid().to_numpy(zero_copy_only=False)
    stored_per_run = np.bincount(run, weights=is_stored, minlength=runs).astype(np.int64)
    size_per_run = np.bincount(run, minlength=runs)
    changed = (size_per_run > 1) | (stored_per_run == 0)
    retired = ids.to_numpy(zero_copy_only=False)[is_stored & changed[run]].astype(np.int64)
    merged = accumulators.merge(
        rows.append_column(_RUN, pa.array(run)), [_RUN],
        extra=[("window_start", "min"), ("window_end", "max")]).sort_by(_RUN)
    heads = rows.take(pa.array(np.flatnonzero(opens)))
    kept_id = pc.if_else(pa.array(changed), pa.nulls(runs, pa.int64()), heads.column("window_id"))
    out = pa.Table.from_arrays(
        [heads.column(KEY_GROUP)] + [heads.column(k) for k in keys]
        + [merged.column("window_start"), merged.column("window_end"), kept_id]
        + [merged.column(f.name) for f in accumulators.fields],
        schema=stored.schema)
    dropped = 0
    if only_into_stored:
        orphan = stored_per_run == 0
        dropped = int(size_per_run[orphan].sum())
        out = out.filter(pa.array(~orphan))
    return MergedSessions(out, retired, dropped)


def _key_changes(rows: pa.Table, keys: list[str]) -> np.ndarray:
    """True where a row's key differs from the previous row's (NULL equals NULL)."""
    n = rows.num_rows
    changes = np.zeros(n, bool)
    if n:
        changes[0] = True
    if n < 2:
        return changes
    for name in [KEY_GROUP, *keys]:  # one pass per key column, not per row
        column = rows.column(name)
        current, previous = column.slice(1), column.slice(0, n - 1)
        equal = pc.fill_null(pc.equal(current, previous), False)
        both_null = pc.and_(pc.is_null(current), pc.is_null(previous))
        same = pc.or_(equal, both_null).to_numpy(zero_copy_only=False)
        changes[1:] |= ~same
    return changes


def _running_max_per_group(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarting at each group (``group`` nondecreasing).

    Values are replaced by their rank so that ``group * n + rank`` orders first by group:
    a plain running maximum then never carries a value across a group boundary.
    """
    n = len(values)
    if not n:
        return values
    order = np.argsort(values, kind="stable")
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    combined = np.maximum.accumulate(group.astype(np.int64) * n + rank)
    return values[order[combined - group.astype(np.int64) * n]]
