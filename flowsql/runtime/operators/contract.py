"""Two refinements of the operator contract that a pull-based runner needs.

* :class:`Source` -- an operator without inputs (scan, values) produces its batches from
  ``produce()``; the runner calls it once, between ``open`` and ``close``, instead of
  ``process_batch``.
* :class:`Limiting` -- an operator that can tell it needs no more input (LIMIT) sets
  ``satisfied``; the runner then stops pulling from its input, which ends the upstream
  pipeline early. Ignoring the flag is always correct, only slower.
* :class:`Merging` -- an operator over several sorted inputs (a merge join) names the input
  it wants its next batch from (``next_input``); the runner interleaves its inputs
  accordingly, which keeps what the operator holds to the current key range. Reading the
  inputs one after the other instead is always correct, only uses more memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

from flowsql.runtime.operator import Operator


class Source(Operator):
    """An operator with no input; ``produce`` yields its whole output."""

    def produce(self) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        raise TypeError(f"{type(self).__name__} has no inputs")


class Limiting(Operator):
    """An operator that may stop wanting input before its input ends."""

    satisfied: bool = False


class Merging(Operator):
    """An operator that consumes its inputs interleaved, one batch at a time, from the
    input it names. ``next_input`` is called before every batch; it returns an input that
    has not ended yet (the runner falls back to the lowest such input otherwise)."""

    def next_input(self) -> int:
        raise NotImplementedError


class PolledSource(Source):
    """A source that may have nothing to give yet (an unbounded one: a watched directory,
    a throttled generator). The streaming runner calls ``poll`` instead of iterating
    ``produce``, so one idle source never blocks the others of the same job.

    ``poll`` returns the batches available now (possibly none) without waiting longer than
    ``max_wait_s``, or None once the source has ended for good (bounded sources only).
    ``produce`` (what the batch runner uses) polls until the end.
    """

    def poll(self, max_wait_s: float) -> list[pa.RecordBatch] | None:
        raise NotImplementedError

    def produce(self) -> Iterator[pa.RecordBatch]:
        while (batches := self.poll(0.05)) is not None:
            yield from batches
