"""Barrier alignment for a task with several input channels.

The task's input handling (never an operator) passes every element it reads to
``BarrierAligner.on_element`` and carries out the returned actions in order:
``Deliver`` the element to the normal path (records, watermarks, idle status, end of input),
``Snapshot`` (snapshot the operators' state, then forward the barrier downstream),
``Unblock`` (read those channels again), ``AbortAlignment`` (drop that checkpoint here).
It must not read a channel while ``is_blocked`` says so: unread elements wait in the
channel, which is what back-pressures the faster inputs during an alignment.

Rules, with ``n`` a checkpoint id and "open" channels those that have not ended:

* ``EXACTLY_ONCE`` (Flink's aligned checkpoints): the first barrier ``n`` starts an
  alignment; each channel that delivers barrier ``n`` is blocked; when every open channel
  has delivered it, ``Snapshot`` then ``Unblock`` of the channels that waited (the one
  whose barrier completes the alignment is never blocked). The snapshot
  therefore reflects exactly the records before barrier ``n`` on every channel;
* ``AT_LEAST_ONCE`` (Flink's barrier tracking): nothing is ever blocked; ``Snapshot`` when
  the last open channel delivers barrier ``n``. Records after barrier ``n`` on a fast
  channel may already be in the snapshot, and are replayed again on recovery;
* a channel that ends (``EndOfInput``) counts as aligned for the pending and every later
  checkpoint: its end is delivered, then the snapshot is taken if it was the last one
  missing;
* an idle sender (``SenderIdle``) still forwards barriers, so idleness excuses nothing:
  an idle open channel is waited for like any other;
* a barrier newer than the pending alignment aborts it (``AbortAlignment``, and the blocked
  channels are unblocked) and starts the new one, as Flink does; in at-least-once mode a
  completed checkpoint aborts every older one still tracked. A barrier of an aborted or an
  already completed checkpoint is dropped;
* ``Snapshot.alignment_ms`` is the time from the first to the last barrier ``n`` (in
  at-least-once mode nothing waits for it: it is the barriers' spread).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from flowsql.errors import ExecutionError
from flowsql.runtime.events import CheckpointBarrier, EndOfInput


class CheckpointingMode(enum.Enum):
    """Flink's ``execution.checkpointing.mode``."""

    EXACTLY_ONCE = "EXACTLY_ONCE"
    AT_LEAST_ONCE = "AT_LEAST_ONCE"


@dataclass(frozen=True)
class Deliver:
    """Hand ``element`` of ``channel`` to the task's normal input path."""

    channel: int
    element: object


@dataclass(frozen=True)
class Snapshot:
    """Snapshot the operators' state for ``barrier``, then forward ``barrier``."""

    barrier: CheckpointBarrier
    alignment_ms: int


@dataclass(frozen=True)
class Unblock:
    channels: tuple[int, ...]


@dataclass(frozen=True)
class AbortAlignment:
    checkpoint_id: int
    reason: str


Action = Deliver | Snapshot | Unblock | AbortAlignment


@dataclass
class _Alignment:
    barrier: CheckpointBarrier
    started_ms: int
    arrived: set[int] = field(default_factory=set)


class BarrierAligner:
    """Alignment state of one task's ``num_channels`` input channels (see module docstring)."""

    def __init__(self, num_channels: int, mode: CheckpointingMode) -> None:
        if num_channels < 1:
            raise ValueError("a task that aligns barriers has at least one input channel")
        self.num_channels = num_channels
        self.mode = mode
        self._finished: set[int] = set()
        self._blocked: set[int] = set()
        # in exactly-once mode at most one entry; in at-least-once mode one per tracked id
        self._alignments: dict[int, _Alignment] = {}
        # barriers up to this id that are not being aligned are obsolete
        self._newest_seen = 0

    def is_blocked(self, channel: int) -> bool:
        return channel in self._blocked

    def is_finished(self, channel: int) -> bool:
        return channel in self._finished

    @property
    def readable_channels(self) -> tuple[int, ...]:
        """Channels the task may read now: neither blocked nor ended."""
        return tuple(c for c in range(self.num_channels)
                     if c not in self._blocked and c not in self._finished)

    @property
    def pending_checkpoints(self) -> tuple[int, ...]:
        return tuple(sorted(self._alignments))

    def on_element(self, channel: int, element: object, now_ms: int) -> tuple[Action, ...]:
        """Feed the next element read from ``channel``; returns the actions to carry out."""
        if not 0 <= channel < self.num_channels:
            raise ExecutionError(f"no input channel {channel} (of {self.num_channels})")
        if channel in self._blocked:
            raise ExecutionError(f"input channel {channel} was read while blocked by an "
                                 "alignment")
        if channel in self._finished:
            raise ExecutionError(f"input channel {channel} delivered an element after its end")
        if isinstance(element, CheckpointBarrier):
            return self._on_barrier(channel, element, now_ms)
        if isinstance(element, EndOfInput):
            self._finished.add(channel)
            return (Deliver(channel, element), *self._complete_ready(now_ms))
        return (Deliver(channel, element),)

    def cancel(self, checkpoint_id: int, reason: str) -> tuple[Action, ...]:
        """The checkpoint was aborted elsewhere: stop aligning it, drop its late barriers."""
        self._newest_seen = max(self._newest_seen, checkpoint_id)
        if checkpoint_id not in self._alignments:
            return ()
        return tuple(self._abort(checkpoint_id, reason))

    # -- barriers ----------------------------------------------------------------------------

    def _on_barrier(self, channel: int, barrier: CheckpointBarrier,
                    now_ms: int) -> tuple[Action, ...]:
        checkpoint_id = barrier.checkpoint_id
        actions: list[Action] = []
        if checkpoint_id not in self._alignments:
            if checkpoint_id <= self._newest_seen:
                return ()
            if self.mode is CheckpointingMode.EXACTLY_ONCE:
                for older in sorted(self._alignments):
                    actions += self._abort(older, f"barrier {checkpoint_id} overtook it")
            self._newest_seen = checkpoint_id
            self._alignments[checkpoint_id] = _Alignment(barrier, now_ms)
        alignment = self._alignments[checkpoint_id]
        if channel in alignment.arrived:
            raise ExecutionError(f"input channel {channel} delivered barrier {checkpoint_id} "
                                 "twice")
        alignment.arrived.add(channel)
        # the channel that completes an alignment never waits, so it is not blocked
        if self.mode is CheckpointingMode.EXACTLY_ONCE and not self._aligned(alignment):
            self._blocked.add(channel)
        actions += self._complete_ready(now_ms)
        return tuple(actions)

    def _complete_ready(self, now_ms: int) -> list[Action]:
        """Snapshot every alignment that no open channel is missing any more (oldest first);
        completing one aborts the older ones still tracked."""
        actions: list[Action] = []
        for checkpoint_id in sorted(self._alignments):
            alignment = self._alignments.get(checkpoint_id)
            if alignment is None or not self._aligned(alignment):
                continue
            for older in sorted(n for n in self._alignments if n < checkpoint_id):
                actions += self._abort(older, f"checkpoint {checkpoint_id} completed first")
            del self._alignments[checkpoint_id]
            actions.append(Snapshot(alignment.barrier, now_ms - alignment.started_ms))
            actions += self._unblock(alignment.arrived)
        return actions

    def _aligned(self, alignment: _Alignment) -> bool:
        """Every open channel delivered the barrier."""
        return all(c in alignment.arrived or c in self._finished
                   for c in range(self.num_channels))

    def _abort(self, checkpoint_id: int, reason: str) -> list[Action]:
        alignment = self._alignments.pop(checkpoint_id)
        return [AbortAlignment(checkpoint_id, reason), *self._unblock(alignment.arrived)]

    def _unblock(self, channels: set[int]) -> list[Action]:
        released = tuple(sorted(channels & self._blocked))
        self._blocked -= set(released)
        return [Unblock(released)] if released else []
