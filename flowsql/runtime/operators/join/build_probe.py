"""One hash join in memory: a build table indexed once, probe batches streamed through it.

:class:`BuildProbeJoin` holds the whole build side (a table and its :class:`KeyIndex`) and
joins each probe batch as it arrives, emitting that batch's output at once; what only the
end of the probe side decides comes from :meth:`BuildProbeJoin.finish`. The hash join
operator uses one for the whole input when the build side fits the memory budget, and the
grace join one per partition pair when it does not.

Every join kind is derived from the pairs ``(lid, rid)`` of left and right row numbers
that satisfy the keys and the residual (:mod:`join_output`). Which side is built changes
what a probe batch can decide alone:

* build right, probe left: a left row meets all its partners in its own batch, so inner,
  left, single, semi, anti and mark rows come out per batch; right and full joins mark the
  build rows they paired (a visited bitmap) and add the never-paired ones at the end.
* build left, probe right: inner, right and the paired part of left / full / single come
  out per batch; semi, anti and mark only know a left row's answer at the end, so they
  gather which left rows were found (and, null-aware, which are unknown) over all batches.

Null-aware joins (``x IN (subquery)`` as mark, ``x NOT IN (subquery)`` as anti): the first
key pair is the IN comparison; further key pairs and the residual are correlation
conditions that select the candidate right rows of a left row. The mark is TRUE when a
candidate matches; otherwise NULL when there are candidates and either the left key is
NULL or some candidate has a NULL key; otherwise FALSE. A null-aware anti join keeps
exactly the left rows whose mark is FALSE. Without correlation conditions every right row
is a candidate, so only two facts about the right side matter (:class:`RightFacts`); a
grace join, which sees the right side in partitions, passes them in for the whole input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.schema import Schema
from flowsql.runtime.kernels.batches import make_batch, positional
from flowsql.runtime.operators.join.join_output import (
    SCALAR_SUBQUERY_ERROR,
    join_result,
    matched,
    paired,
    unmatched_right_rows,
)
from flowsql.runtime.operators.join.key_index import KeyIndex

# Pairs checked against the residual at a time (bounds the rows materialized at once).
_RESIDUAL_CHUNK = 1 << 20
_EMPTY = np.zeros(0, dtype=np.int64)

Residual = Callable[[pa.RecordBatch], pa.Array]


@dataclass
class RightFacts:
    """What a null-aware join without correlation conditions needs of the whole right
    side: whether it has rows, and whether one of them has a NULL IN key."""

    has_rows: bool = False
    has_null_key: bool = False

    def add(self, first_key: pa.Array | pa.ChunkedArray) -> None:
        self.has_rows = self.has_rows or len(first_key) > 0
        self.has_null_key = self.has_null_key or first_key.null_count > 0


@dataclass(frozen=True)
class JoinSpec:
    """The parts of a hash join node a build/probe join needs."""

    kind: str
    build_side: str  # "left" or "right"
    left_schema: Schema
    right_schema: Schema
    residual: Residual | None
    null_aware: bool
    key_count: int
    #: positions in :attr:`pair_schema` of the columns the residual reads, the fields it
    #: was compiled against (None: it was compiled against the whole pair schema); only
    #: these columns of the candidate pairs are gathered to check it
    residual_columns: tuple[int, ...] | None = None

    @property
    def pair_schema(self) -> Schema:
        return (*self.left_schema, *self.right_schema)

    @property
    def existence_only(self) -> bool:
        """Whether a build-left probe only needs to know which left rows have a pair
        (semi, anti, mark): a left row already paired needs no further pairs."""
        return self.kind in ("semi", "anti", "mark")


def _nulls(key: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(key.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _table(columns: Sequence[pa.Array | pa.ChunkedArray], rows: int) -> pa.Table:
    return positional(columns, rows)


class BuildProbeJoin:
    """See the module docstring. ``build`` is the build side's table (columns by
    position), ``build_keys`` its key columns cast to the common key types. ``facts``
    (null-aware joins) describe the whole right side when this join sees only part of it;
    None means this join sees all of it. ``spare_bytes``: memory granted to the index
    beyond its usual size (what it takes is ``index.extra_bytes``)."""

    def __init__(self, spec: JoinSpec, build: pa.Table, build_keys: list[pa.Array],
                 facts: RightFacts | None = None, spare_bytes: int = 0) -> None:
        self.spec = spec
        self.build = build
        self.build_keys = build_keys
        self.index = KeyIndex(build_keys, build.num_rows, spare_bytes)
        rows = build.num_rows
        self._build_left = spec.build_side == "left"
        self._visited = np.zeros(rows, dtype=bool)  # build rows paired so far
        self._unknown = np.zeros(rows, dtype=bool)  # null-aware, build left
        self._counts = np.zeros(rows, dtype=np.int64) if spec.kind == "single" else None
        self._facts = facts
        self._seen = RightFacts()  # the probe side's facts, when the right side is probed
        if not self._build_left:
            self._seen.add(build_keys[0] if build_keys else pa.array([], pa.null()))
            self._seen.has_rows = rows > 0

    @property
    def nbytes(self) -> int:
        """Bytes held beyond the build table and keys (index and bitmaps)."""
        return self.index.nbytes + 2 * len(self._visited)

    # -- probing -------------------------------------------------------------------------

    def probe(self, batch: pa.Table, keys: list[pa.Array]) -> pa.Table | None:
        """The output this probe batch decides (None if nothing)."""
        if self._build_left:
            return self._probe_right(batch, keys)
        return self._probe_left(batch, keys)

    def finish(self) -> pa.Table | None:
        """The output only the end of the probe side decides."""
        spec, build = self.spec, self.build
        if not self._build_left:
            if spec.kind in ("right", "full"):
                empty = self._empty(spec.left_schema)
                columns, rows = unmatched_right_rows(empty, build, self._visited)
                return _table(columns, rows)
            return None
        kind = spec.kind
        if kind in ("inner", "right"):
            return None
        if kind in ("left", "full", "single"):
            empty = self._empty(spec.right_schema)
            lonely = np.flatnonzero(~self._visited)
            columns = paired(build, empty, lonely, pa.nulls(len(lonely), pa.int64()))
            return _table(columns, len(lonely))
        mark = self._left_build_mark()
        return self._marked(build, mark)

    def _empty(self, schema: Schema) -> pa.Table:
        return pa.table([pa.array([], f.dtype) for f in schema],
                        names=[f"c{i}" for i in range(len(schema))])

    # -- build right: probe rows are left rows ---------------------------------------------

    def _probe_left(self, left: pa.Table, lkeys: list[pa.Array]) -> pa.Table | None:
        spec, right = self.spec, self.build
        kind = spec.kind
        lid, rid = self._pairs_on_all_keys(left, lkeys, left_probe=True)
        if kind in ("inner", "left", "right", "full", "single"):
            if kind in ("right", "full"):
                self._visited[rid] = True
            columns, rows = join_result(kind, left, right, lid, rid, unmatched_right=False)
            return _table(columns, rows)
        found = matched(lid, left.num_rows)
        if spec.null_aware:
            unknown = self._unknown_of(left, lkeys, right, self.build_keys, found)
            mark = pa.array(found, mask=unknown & ~found)
        else:
            mark = pa.array(found)
        return self._marked(left, mark)

    def _marked(self, left: pa.Table, mark: pa.Array) -> pa.Table | None:
        """Mark: left rows plus the mark; semi / anti: the left rows kept."""
        kind = self.spec.kind
        if kind == "mark":
            return _table([*left.columns, mark], left.num_rows)
        if kind == "semi":
            keep = mark.to_numpy(zero_copy_only=False)
        else:  # anti: left rows whose mark is FALSE (not TRUE, and for NOT IN not NULL)
            keep = pc.fill_null(pc.invert(mark), False).to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(np.asarray(keep, dtype=bool))
        if not len(rows):
            return None
        return _table(left.take(pa.array(rows)).columns, len(rows))

    # -- build left: probe rows are right rows ---------------------------------------------

    def _probe_right(self, right: pa.Table, rkeys: list[pa.Array]) -> pa.Table | None:
        spec, left = self.spec, self.build
        kind = spec.kind
        self._seen.add(rkeys[0] if rkeys else pa.nulls(right.num_rows))
        lid, rid = self._pairs_on_all_keys(right, rkeys, left_probe=False)
        self._visited[lid] = True
        if kind == "single" and len(lid):
            assert self._counts is not None
            self._counts += np.bincount(lid, minlength=len(self._counts))
            if self._counts.max() > 1:
                raise ExecutionError(SCALAR_SUBQUERY_ERROR)
        if kind in ("inner", "left", "full", "single", "right"):
            lids = pa.array(lid)
            rids = pa.array(rid)
            if kind in ("right", "full"):
                lonely = np.flatnonzero(~matched(rid, right.num_rows))
                lids = pa.concat_arrays([lids, pa.nulls(len(lonely), pa.int64())])
                rids = pa.concat_arrays([rids, pa.array(lonely)])
            return _table(paired(left, right, lids, rids), len(lids))
        if spec.null_aware:
            self._unknown |= self._unknown_of(left, self.build_keys, right, rkeys,
                                              self._visited, defer_facts=True)
        return None

    def _left_build_mark(self) -> pa.Array:
        found = self._visited
        if not self.spec.null_aware:
            return pa.array(found)
        unknown = self._unknown
        if self._uses_facts():
            unknown = self._facts_unknown(self.build_keys[0])
        return pa.array(found, mask=unknown & ~found)

    # -- pairs ------------------------------------------------------------------------------

    def _pairs_on_all_keys(self, probe: pa.Table, keys: list[pa.Array], left_probe: bool
                           ) -> tuple[np.ndarray, np.ndarray]:
        """Pairs ``(lid, rid)`` of the probe batch with the build table, all keys equal
        and the residual true."""
        pid, bid = self.index.probe(keys)
        if self.spec.residual is None or not len(pid):
            return (pid, bid) if left_probe else (bid, pid)
        if not left_probe and self.spec.existence_only:
            # a left row already paired keeps its answer: its pairs skip the residual
            open_pairs = ~self._visited[bid]
            pid, bid = pid[open_pairs], bid[open_pairs]
            if not len(pid):
                return bid, pid
        lid, rid = (pid, bid) if left_probe else (bid, pid)
        left, right = (probe, self.build) if left_probe else (self.build, probe)
        return self._filter_residual(left, right, lid, rid)

    def _filter_residual(self, left: pa.Table, right: pa.Table, lid: np.ndarray,
                         rid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        residual = self.spec.residual
        assert residual is not None
        keep = []
        for start in range(0, len(lid), _RESIDUAL_CHUNK):
            li, ri = lid[start:start + _RESIDUAL_CHUNK], rid[start:start + _RESIDUAL_CHUNK]
            batch = self._residual_input(left, right, li, ri)
            mask = residual(batch).to_numpy(zero_copy_only=False)
            keep.append(np.flatnonzero(mask) + start)
        survivors = np.concatenate(keep)
        return lid[survivors], rid[survivors]

    def _residual_input(self, left: pa.Table, right: pa.Table, lid: np.ndarray,
                        rid: np.ndarray) -> pa.RecordBatch:
        """The pairs' rows as the residual reads them: only its columns when it was
        compiled against those (:attr:`JoinSpec.residual_columns`)."""
        spec = self.spec
        if spec.residual_columns is None:
            return make_batch(paired(left, right, lid, rid), spec.pair_schema, len(lid))
        width = len(spec.left_schema)
        lids, rids = pa.array(lid), pa.array(rid)
        columns = [left.column(i).take(lids) if i < width else right.column(i - width).take(rids)
                   for i in spec.residual_columns]
        pair = spec.pair_schema
        return make_batch(columns, tuple(pair[i] for i in spec.residual_columns), len(lid))

    def _correlated_pairs(self, left: pa.Table, lkeys: list[pa.Array], right: pa.Table,
                          rkeys: list[pa.Array], lrows: np.ndarray, rrows: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
        """Pairs among the given rows equal on the correlation keys (all keys but the
        first; every pair if there are none) that satisfy the residual."""
        others = range(1, len(lkeys))
        if others:
            index = KeyIndex([rkeys[k].take(pa.array(rrows)) for k in others], len(rrows))
            pl, pr = index.probe([lkeys[k].take(pa.array(lrows)) for k in others])
            lid, rid = lrows[pl], rrows[pr]
        else:
            lid = np.repeat(lrows, len(rrows))
            rid = np.tile(rrows, len(lrows))
        if self.spec.residual is None or not len(lid):
            return lid, rid
        return self._filter_residual(left, right, lid, rid)

    # -- null-aware ---------------------------------------------------------------------------

    def _uses_facts(self) -> bool:
        """Without correlation conditions the unknown rows follow from :class:`RightFacts`."""
        return self.spec.key_count == 1 and self.spec.residual is None

    def _facts_unknown(self, first_left_key: pa.Array | pa.ChunkedArray) -> np.ndarray:
        facts = self._facts or self._seen
        lnull = _nulls(first_left_key)
        return (lnull & facts.has_rows) | (~lnull & facts.has_null_key)

    def _unknown_of(self, left: pa.Table, lkeys: list[pa.Array], right: pa.Table,
                    rkeys: list[pa.Array], found: np.ndarray,
                    defer_facts: bool = False) -> np.ndarray:
        """Left rows not found whose mark is NULL given the right rows in ``right``: a
        NULL left key against any candidate, a non-NULL one against a candidate with a
        NULL key. ``defer_facts``: the right side is only partly seen, the fact-based
        case is decided at the end instead."""
        if self._uses_facts():
            if defer_facts:
                return np.zeros(left.num_rows, dtype=bool)
            return self._facts_unknown(lkeys[0])
        unknown = np.zeros(left.num_rows, dtype=bool)
        if not right.num_rows:
            return unknown
        lnull = _nulls(lkeys[0])
        rnull = _nulls(rkeys[0])
        open_rows = ~found
        nulls_left = np.flatnonzero(open_rows & lnull)
        if len(nulls_left):
            hit, _ = self._correlated_pairs(left, lkeys, right, rkeys, nulls_left,
                                            np.arange(right.num_rows))
            unknown[hit] = True
        rows = np.flatnonzero(open_rows & ~lnull)
        null_right = np.flatnonzero(rnull)
        if len(rows) and len(null_right):
            hit, _ = self._correlated_pairs(left, lkeys, right, rkeys, rows, null_right)
            unknown[hit] = True
        return unknown
