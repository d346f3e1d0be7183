"""Grace hash join: both inputs partitioned to disk by key hash, joined partition by partition.

Used when the build side does not fit ``execution.memory-budget``. It is *hybrid*: build
partitions stay in memory while the operator's share has room, and only a partition that
no longer fits is written to disk (with all its rows so far, and every later row of it).
At the end of the build side the resident partitions are indexed and joined with their
probe rows as those arrive; only the probe rows of spilled partitions go to disk. So a
build side a little over its share costs a little disk traffic, not the whole probe side. Every build row and
every probe row goes to the spill partition its key hash names
(:func:`flowsql.runtime.spill.partition_indices`), so rows with equal keys always meet in
the same partition pair, and a row of either side lives in exactly one pair: each pair is
then an ordinary in-memory :class:`BuildProbeJoin`, and the union of the pairs' outputs
is the join's output for every kind (a NULL-key row also lands in one partition, where it
finds no partner and comes out once as an outer, anti or FALSE-marked row).

A pair whose build partition still does not fit is partitioned again with the next salt
(``level + 1``), both sides alike, and so on. A build partition whose rows all share one
key cannot be split by any salt: that fails with ResourceExhausted naming the key.

Spilled batches carry the row's columns followed by its key columns, already cast to the
common key types, so nothing is evaluated twice.

Null-aware joins partition on their correlation keys (every key pair but the first: the
candidates of a left row share them). Without correlation keys, the IN key itself is the
partition key and the two facts about the whole right side that decide NULL marks
(:class:`RightFacts`) are gathered while partitioning; with only a residual as
correlation (every right row a candidate) the join cannot be partitioned and fails with
ResourceExhausted when it has to spill.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ResourceExhausted
from flowsql.runtime.kernels.batches import positional
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.join.build_probe import BuildProbeJoin, JoinSpec, RightFacts
from flowsql.runtime.partitioning import hash_columns
from flowsql.runtime.spill import SpillRun, SpillWriter, partition_indices

#: partitions per level: the build side shrinks by this factor per level of recursion
PARTITIONS = 16
#: levels of re-partitioning before giving up (16**8 partitions separate any two keys
#: whose salted hashes differ)
MAX_LEVEL = 8
#: bytes per build row an index holds at most beyond its data (KeyIndex, bitmaps)
INDEX_BYTES_PER_ROW = 50


def partition_key_columns(spec: JoinSpec) -> list[int]:
    """Which key columns decide a row's partition (see the module docstring)."""
    if spec.null_aware and spec.key_count > 1:
        return list(range(1, spec.key_count))
    return list(range(spec.key_count))


def can_partition(spec: JoinSpec) -> bool:
    """False for a null-aware join correlated only by its residual."""
    return not (spec.null_aware and spec.key_count == 1 and spec.residual is not None)


class SpilledPartitions:
    """One input written to ``count`` spill runs by the salted hash of its partition keys."""

    def __init__(self, context: OperatorContext, schema: pa.Schema, key_columns: list[int],
                 level: int, label: str, count: int = PARTITIONS) -> None:
        self._context = context
        self._schema = schema
        self._key_positions = key_columns
        self._level = level
        self._label = label
        self._writers: list[SpillWriter | None] = [None] * count
        self._null_writer: SpillWriter | None = None

    def add(self, batch: pa.RecordBatch) -> None:
        for number, piece in self.pieces(batch):
            self.write(number, piece)

    def pieces(self, batch: pa.RecordBatch) -> list[tuple[int, pa.RecordBatch]]:
        """``batch``'s rows by partition (only partitions that get rows); rows with a NULL
        partition key are written to the NULL run at once."""
        if not batch.num_rows:
            return []
        if batch.schema != self._schema:
            batch = pa.RecordBatch.from_arrays(batch.columns, schema=self._schema)
        keys = [batch.column(i) for i in self._key_positions]
        if any(k.null_count for k in keys):
            valid = keys[0].is_valid()
            for key in keys[1:]:
                valid = pc.and_(valid, key.is_valid())
            nulls = batch.filter(pc.invert(valid))
            if self._null_writer is None:
                self._null_writer = SpillWriter(self._context.spill, self._schema,
                                                f"{self._label}-l{self._level}null",
                                                self._context.metrics)
            self._null_writer.write(nulls)
            batch = batch.filter(valid)
            if not batch.num_rows:
                return []
            keys = [batch.column(i) for i in self._key_positions]
        parts = partition_indices(keys, len(self._writers), self._level)
        order = np.argsort(parts, kind="stable")
        counts = np.bincount(parts, minlength=len(self._writers))
        ordered = batch.take(pa.array(order))
        pieces = []
        start = 0
        for number, count in enumerate(counts):
            if count:
                pieces.append((number, ordered.slice(start, int(count))))
            start += int(count)
        return pieces

    def write(self, number: int, piece: pa.RecordBatch) -> None:
        """Append rows of partition ``number`` to its run."""
        writer = self._writers[number]
        if writer is None:
            writer = SpillWriter(self._context.spill, self._schema,
                                 f"{self._label}-l{self._level}p{number}",
                                 self._context.metrics)
            self._writers[number] = writer
        writer.write(piece)

    def finish(self) -> list[SpillRun | None]:
        return [w.finish() if w is not None else None for w in self._writers]

    def finish_nulls(self) -> SpillRun | None:
        """The rows with a NULL partition key (kept out of the partitions, see
        :meth:`GraceHashJoin.results`)."""
        return self._null_writer.finish() if self._null_writer is not None else None


class GraceHashJoin:
    """See the module docstring. Spilled batches are laid out as ``data + keys``: the
    first ``data_width`` columns the side's own, the rest its cast key columns."""

    def __init__(self, spec: JoinSpec, context: OperatorContext, memory: HeldMemory,
                 build_schema: pa.Schema, probe_schema: pa.Schema, name: str) -> None:
        if not can_partition(spec):
            raise ResourceExhausted(
                f"{name}: the build side needs more memory than execution.memory-budget "
                "allows, and an IN / NOT IN subquery correlated only by a non-equality "
                "condition cannot be split to disk; raise the budget with SET "
                "'execution.memory-budget' = '...'")
        self.spec = spec
        self._context = context
        self._memory = memory
        self._name = name
        self._schemas = (build_schema, probe_schema)
        width = spec.key_count
        self._widths = (len(build_schema) - width, len(probe_schema) - width)
        keys = partition_key_columns(spec)
        self._key_columns = ([self._widths[0] + k for k in keys],
                             [self._widths[1] + k for k in keys])
        self._build = self._partitions(0, 0)
        self._probe = self._partitions(1, 0)
        # the whole right side's facts, for null-aware joins without correlation keys
        self._facts = RightFacts()
        self._right_is_probe = spec.build_side == "left"
        #: hybrid: the build rows of level-0 partitions still in memory (None: spilled)
        self._resident: list[list[pa.RecordBatch] | None] = [[] for _ in range(PARTITIONS)]
        #: bytes held for each resident partition (its rows, then its index too)
        self._resident_bytes = [0] * PARTITIONS
        #: after the build side: the joins of the resident partitions, by partition
        self._joins: dict[int, BuildProbeJoin] = {}

    def _partitions(self, side: int, level: int) -> SpilledPartitions:
        label = ("hash-join-build", "hash-join-probe")[side]
        return SpilledPartitions(self._context, self._schemas[side], self._key_columns[side],
                                 level, label)

    def add_build(self, batch: pa.RecordBatch) -> None:
        """Hold the batch's rows in their partitions while the share allows; a partition
        that no longer fits goes to disk with all its rows (a hybrid hash join: the
        partitions that fit are joined in memory as the probe side streams)."""
        if not self._right_is_probe:
            self._facts.add(batch.column(self._widths[0]))
        for number, piece in self._build.pieces(batch):
            held = self._resident[number]
            if held is not None and self._memory.try_hold(piece.nbytes):
                held.append(piece)
                self._resident_bytes[number] += piece.nbytes
                continue
            if held is not None:
                self._spill_resident(number)
            self._build.write(number, piece)

    def _spill_resident(self, number: int) -> None:
        """Write a resident build partition to disk and release what it held."""
        held = self._resident[number]
        assert held is not None
        for piece in held:
            self._build.write(number, piece)
        self._resident[number] = None
        self._joins.pop(number, None)
        self._memory.release(self._resident_bytes[number])
        self._resident_bytes[number] = 0

    def end_build(self) -> None:
        """Index the resident partitions (spilling those whose index does not fit)."""
        for number, held in enumerate(self._resident):
            if held is None:
                continue
            rows = sum(piece.num_rows for piece in held)
            if not self._memory.try_hold(INDEX_BYTES_PER_ROW * rows):
                self._spill_resident(number)
                continue
            self._resident_bytes[number] += INDEX_BYTES_PER_ROW * rows
            table = pa.Table.from_batches(held, schema=self._schemas[0])
            self._resident[number] = []
            data, keys = self._split_columns(table, 0)
            self._joins[number] = BuildProbeJoin(self.spec, data, keys, self._facts)

    def add_probe(self, batch: pa.RecordBatch) -> list[pa.Table]:
        """Join the batch's rows of resident partitions at once (their output); spill the
        rest with their partitions."""
        if self._right_is_probe:
            self._facts.add(batch.column(self._widths[1]))
        out = []
        for number, piece in self._probe.pieces(batch):
            joined = self._joins.get(number)
            if joined is None:
                self._probe.write(number, piece)
                continue
            data, keys = self._split_columns(piece, 1)
            result = joined.probe(data, keys)
            if result is not None and result.num_rows:
                out.append(result)
        return out

    def _resident_results(self) -> Iterator[pa.Table]:
        """What the resident partitions decide at the end of the probe side."""
        for number in sorted(self._joins):
            joined = self._joins.pop(number)
            out = joined.finish()
            del joined
            self._memory.release(self._resident_bytes[number])
            self._resident_bytes[number] = 0
            if out is not None and out.num_rows:
                yield out

    def results(self) -> Iterator[pa.Table]:
        """Outputs of every partition pair (the runs are deleted as they are joined).

        Rows with a NULL partition key pair with nothing (equality never holds on NULL;
        for null-aware joins the partition keys are correlation keys, so such a row has
        no candidate, or the IN key, whose NULL rows the right side's facts decide).
        They are kept out of the partitions, where a mass of them would look like one
        huge key, and joined against nothing: build rows in slices as unmatched build
        rows, probe rows against an empty build side, needing no more memory than a
        batch."""
        builds, probes = self._build.finish(), self._probe.finish()
        null_builds, null_probes = self._build.finish_nulls(), self._probe.finish_nulls()
        try:
            yield from self._resident_results()
            yield from self._join_all(builds, probes, 0)
            for run, side in ((null_builds, 0), (null_probes, 1)):
                if run is not None:
                    yield from self._unpaired(run, side)
        finally:
            for run in (null_builds, null_probes):
                if run is not None:
                    run.delete()

    def _unpaired(self, run: SpillRun, side: int) -> Iterator[pa.Table]:
        """The output of rows that cannot pair, read back a batch at a time."""
        if side == 1:
            joined = self._in_memory(None)
        for batch in run.read():
            data, keys = self._split_columns(batch, side)
            if side == 0:
                out = BuildProbeJoin(self.spec, data, keys, self._facts).finish()
            else:
                out = joined.probe(data, keys)
            if out is not None and out.num_rows:
                yield out
        if side == 1:
            out = joined.finish()
            if out is not None and out.num_rows:
                yield out

    def _join_all(self, builds: Sequence[SpillRun | None], probes: Sequence[SpillRun | None],
                  level: int) -> Iterator[pa.Table]:
        for number, (build, probe) in enumerate(zip(builds, probes)):
            try:
                yield from self._join_pair(build, probe, level)
            except BaseException:
                for run in (*builds[number:], *probes[number:]):
                    if run is not None:
                        run.delete()
                raise

    def _join_pair(self, build: SpillRun | None, probe: SpillRun | None,
                   level: int) -> Iterator[pa.Table]:
        if build is None and probe is None:
            return
        if build is None and self.spec.build_side == "right" and self.spec.kind in (
                "inner", "semi"):
            assert probe is not None
            probe.delete()  # no build row: nothing in this pair can match
            return
        need = 0 if build is None else build.nbytes + INDEX_BYTES_PER_ROW * build.rows
        if not self._memory.try_hold(need):
            assert build is not None
            yield from self._split(build, probe, level)
            return
        yield from self._join_held(build, probe, need)

    def _join_held(self, build: SpillRun | None, probe: SpillRun | None,
                   need: int) -> Iterator[pa.Table]:
        """Join a pair whose build side's ``need`` bytes are held (released at the end)."""
        try:
            joined = self._in_memory(build)
            if probe is not None:
                for batch in probe.read():
                    data, keys = self._split_columns(batch, 1)
                    out = joined.probe(data, keys)
                    if out is not None and out.num_rows:
                        yield out
                probe.delete()
            out = joined.finish()
            if out is not None and out.num_rows:
                yield out
        finally:
            self._memory.release(need)

    def _in_memory(self, build: SpillRun | None) -> BuildProbeJoin:
        if build is None:
            table = pa.Table.from_batches([], schema=self._schemas[0])
        else:
            table = build.read_table()
            build.delete()
        data, keys = self._split_columns(table, 0)
        return BuildProbeJoin(self.spec, data, keys, self._facts)

    def _split_columns(self, rows: pa.Table | pa.RecordBatch, side: int
                       ) -> tuple[pa.Table, list[pa.Array]]:
        width = self._widths[side]
        columns = rows.columns
        data = positional(columns[:width], rows.num_rows)
        keys = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
                for c in columns[width:]]
        return data, keys

    def _split(self, build: SpillRun, probe: SpillRun | None, level: int) -> Iterator[pa.Table]:
        """Partition a pair whose build side does not fit again, one level deeper."""
        key = self._single_key(build)
        if key is not None or level + 1 >= MAX_LEVEL:
            need = build.nbytes + INDEX_BYTES_PER_ROW * build.rows
            if self._memory.try_hold(need, beyond_share=True):
                yield from self._join_held(build, probe, need)
                return
            self._skewed(build, key)
        sub_builds = self._partitions(0, level + 1)
        for batch in build.read():
            sub_builds.add(batch)
        build.delete()
        sub_probes = self._partitions(1, level + 1)
        if probe is not None:
            for batch in probe.read():
                sub_probes.add(batch)
            probe.delete()
        yield from self._join_all(sub_builds.finish(), sub_probes.finish(), level + 1)

    def _single_key(self, build: SpillRun) -> dict[str, object] | None:
        """The partition keys' values if every build row has the same ones, else None."""
        first: int | None = None
        sample: pa.RecordBatch | None = None
        for batch in build.read():
            hashes = hash_columns([batch.column(i) for i in self._key_columns[0]])
            if first is None:
                first, sample = int(hashes[0]), batch.slice(0, 1)
            if (hashes != np.uint64(first)).any():
                return None
        assert sample is not None
        return {sample.schema.field(i).name: sample.column(i)[0].as_py()
                for i in self._key_columns[0]}

    def _skewed(self, build: SpillRun, key: dict[str, object] | None) -> None:
        held = build.nbytes + INDEX_BYTES_PER_ROW * build.rows
        available = self._context.memory.available
        free = "" if available is None else f", {available / 2**20:.2f} MiB free"
        what = (f"the {build.rows} build rows with join key "
                + ", ".join(f"{v!r}" for v in key.values()) if key is not None
                else f"a partition of {build.rows} build rows")
        raise ResourceExhausted(
            f"{self._name}: {what} need {held / 2**20:.2f} MiB in memory at once, more "
            f"than execution.memory-budget allows{free}; rows of one key cannot be split "
            "to disk. Raise the budget with SET 'execution.memory-budget' = '...'")
