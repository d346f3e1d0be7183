"""The operator contract: logic only, no channels, no threads, no alignment.

Call order, made by the task runner (never by operators themselves)::

    open(context)
    ( process_batch(input, batch) | process_watermark(watermark) | on_timer(t) )*
    end_input(input)            -- once per input, after its last batch
    ( snapshot_state(checkpoint_id) / notify_checkpoint_complete(id) )*   -- streaming
    close()

Every hook returns the batches it emits (an iterable, possibly empty), so an operator never
touches a channel; the runner forwards what it returns. Only ``process_batch`` must be
written; every other hook has a safe default. Inputs are numbered from 0 in the order of
the physical node's ``inputs``. An operator with several inputs may say which input it wants
to consume first (``input_order``): a hash join reads its build side to the end before the
probe side, which is what lets a single-process runner stream the probe side.

Blocking operators account the bytes they hold with ``context.memory.reserve`` so a query
that exceeds ``execution.memory-budget`` fails with a clear message instead of swapping. An
operator that can spill asks first (``context.memory.try_reserve``) and, when the budget is
full, writes part of what it holds to ``context.spill`` (files under ``io.tmp.dirs``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from flowsql.errors import ResourceExhausted
from flowsql.runtime.spill.spill_space import SpillSpace
from flowsql.runtime.time.watermarks import epoch_ms

if TYPE_CHECKING:
    from flowsql.runtime.operators.shared_subplan import SharedSubplans


class MemoryBudget:
    """Bytes held by blocking operators of one job, against a limit (None: unlimited).

    ``consumers`` is how many operators of the job may hold memory at once; a spilling
    operator keeps within :attr:`share`, so one that holds its data first never leaves the
    others nothing (see :mod:`flowsql.runtime.spill.memory_shares`).
    """

    def __init__(self, limit_bytes: int | None, consumers: int = 1) -> None:
        self.limit = limit_bytes
        self.consumers = max(1, consumers)
        self.used = 0
        self.peak = 0

    @property
    def share(self) -> int | None:
        """What one spilling operator may hold (None: unlimited)."""
        return None if self.limit is None else self.limit // self.consumers

    def reserve(self, nbytes: int, who: str) -> None:
        self.used += nbytes
        self.peak = max(self.peak, self.used)
        if self.limit is not None and self.used > self.limit:
            raise ResourceExhausted(
                f"{who} needs more memory than execution.memory-budget allows "
                f"({self.used / 2**20:.1f} MiB held, budget {self.limit / 2**20:.1f} MiB); "
                "raise the budget with SET 'execution.memory-budget' = '...'")

    def try_reserve(self, nbytes: int) -> bool:
        """Reserve ``nbytes`` if they fit under the limit; False (nothing reserved) if
        not. Operators that can spill call this and spill instead of failing."""
        if self.limit is not None and self.used + nbytes > self.limit:
            return False
        self.used += nbytes
        self.peak = max(self.peak, self.used)
        return True

    @property
    def available(self) -> int | None:
        """Bytes still free under the limit (None: unlimited)."""
        return None if self.limit is None else max(0, self.limit - self.used)

    def release(self, nbytes: int) -> None:
        self.used = max(0, self.used - nbytes)


@dataclass
class OperatorContext:
    """What an operator may know about where it runs."""

    name: str
    settings: dict[str, str] = field(default_factory=dict)
    memory: MemoryBudget = field(default_factory=lambda: MemoryBudget(None))
    #: where a spilling operator writes its files; one per job (or per worker task), removed
    #: by the runner when the job ends, fails or is cancelled
    spill: SpillSpace = field(default_factory=SpillSpace)
    subtask_index: int = 0
    parallelism: int = 1
    metrics: dict[str, Any] = field(default_factory=dict)
    #: the job this operator belongs to; the same across restarts of the job (a sink
    #: names its files after it, so a recovery can tell its own leftovers)
    job_id: str = "local"
    #: 0 on the first run, +1 per restart from a checkpoint (a restored run's files never
    #: collide with the failed run's)
    attempt: int = 0
    #: the run takes checkpoints: at the end of the input a final checkpoint follows
    #: ``end_input`` before ``close``, so a two-phase-commit sink commits its last rows on
    #: that checkpoint's completion instead of at ``end_input``
    checkpointing: bool = False
    #: the processing-time clock (epoch ms) state time-to-live reads; tests fix it
    processing_clock: Callable[[], int] = epoch_ms
    #: metrics measured when they are asked for (keyed state size), by metric name
    gauges: dict[str, Callable[[], int]] = field(default_factory=dict)
    #: the operator's id within the job (what its checkpointed state is stored under;
    #: empty outside a streaming run)
    operator_id: str = ""
    #: the buffered outputs of the plan's shared subplans (``operators.shared_subplan``);
    #: None under a runner that does not share subplans (streaming)
    shared_subplans: SharedSubplans | None = None


class Operator:
    """Base class with safe defaults; see the module docstring for the call order."""

    #: inputs in the order the operator wants them consumed (None: any order / interleaved)
    input_order: tuple[int, ...] | None = None

    def open(self, context: OperatorContext) -> None:
        self.context = context

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        raise NotImplementedError

    def process_watermark(self, watermark: int) -> Iterable[pa.RecordBatch]:
        return ()

    def on_timer(self, timestamp: int) -> Iterable[pa.RecordBatch]:
        return ()

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        return ()

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        return {}

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        return None

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        return None

    def close(self) -> None:
        return None
