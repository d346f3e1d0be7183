"""The checkpointing of one task: barriers in, snapshots out, acknowledgements up.

A task (a subtask of a stage on a worker, or the whole job in one process) owns one
``TaskCheckpointer``. Its input channels for alignment are the task's exchange channels
(numbered as in its input gate) plus, when the task has sources of its own (scans,
datagen), one more channel for them: the coordinator's trigger is the barrier on that
channel. The checkpointer feeds every barrier and every channel end to a
:class:`BarrierAligner` and carries out what it says:

* ``Snapshot``: take every operator's state (``StreamingRun.snapshot``: between two
  elements, so the state is consistent), queue the barrier behind the output produced so
  far (``emit_barrier``: the task forwards it downstream), then hand the tables to the
  writer thread, which persists them through the state backend and acknowledges. Arrow
  tables are immutable, so the write runs beside the processing without copying;
* ``Unblock``: read those channels again (a gate channel, or the task's own sources);
* a blocked channel is not read: the gate leaves its elements queued (credit-based flow
  control then stops its sender), the run does not poll paused sources.

Commands from the coordinator arrive on ``commands`` (any thread) and are carried out at
the start of the run's next turn, in order: ``trigger`` (a barrier for the task's own
sources; a savepoint's, with ``savepoint``: its directory, reaches every task, and the
barrier is of kind ``SAVEPOINT``: whichever task it reaches writes its snapshot there),
``complete`` (``notify_checkpoint_complete`` on every operator: a two-phase-commit
sink publishes its files), ``stop`` (end the run; a stop follows the completion of the
checkpoint a cancel takes, so the sink has committed everything before it), ``drain``
(end the task's own sources as if their input ended: a stop with drain), and, once
every input of the task ended (``on_end_of_input``), ``final``: the job's last checkpoint,
taken when every task of the job reached the end of its input (a savepoint, with
``savepoint``, when the job is being stopped with drain and a savepoint).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from flowsql.runtime.checkpoint.alignment import (
    BarrierAligner,
    CheckpointingMode,
    Snapshot,
    Unblock,
)
from flowsql.runtime.checkpoint.metadata import SubtaskState
from flowsql.runtime.events import BarrierKind, CheckpointBarrier, EndOfInput


class CheckpointedRun(Protocol):
    """What the checkpointer needs of the run (``StreamingRun``)."""

    def snapshot(self, checkpoint_id: int) -> dict[str, dict[str, pa.Table]]: ...

    def emit_barrier(self, barrier: CheckpointBarrier) -> None: ...

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None: ...

    def cancel(self) -> None: ...

    def end_sources(self) -> None: ...


class ChannelBlocking(Protocol):
    """The gate's side of alignment (``GateReader``)."""

    def block(self, channel: int) -> None: ...

    def unblock(self, channel: int) -> None: ...


class Persist(Protocol):
    """Persists one operator subtask's tables for checkpoint ``checkpoint_id`` and returns
    its handles; with ``savepoint_dir`` the checkpoint is a savepoint written there
    (``TaskState.persist``)."""

    def __call__(self, checkpoint_id: int, operator_id: str, tables: Mapping[str, pa.Table],
                 savepoint_dir: str | None = None) -> SubtaskState: ...


#: how long the writer waits for the directory of a savepoint whose barrier came first
SAVEPOINT_DIR_WAIT_S = 60.0


@dataclass(frozen=True)
class Acknowledgement:
    """One task's part of checkpoint ``checkpoint_id``."""

    checkpoint_id: int
    states: dict[str, SubtaskState]
    alignment_ms: int
    sync_ms: float
    async_ms: float


@dataclass(frozen=True)
class Decline:
    checkpoint_id: int
    reason: str


@dataclass(frozen=True)
class InputEnded:
    """Every input of the task ended; it waits for the job's final checkpoint."""


class TaskCheckpointer:
    """See the module docstring. ``gate_channels`` is the number of exchange channels,
    ``own_sources`` whether the task has sources of its own; ``report`` receives each
    :class:`Acknowledgement` or :class:`Decline` (from the writer thread)."""

    def __init__(self, mode: CheckpointingMode, gate_channels: int, own_sources: bool,
                 persist: Persist,
                 report: Callable[[Acknowledgement | Decline | InputEnded], None],
                 gate: ChannelBlocking | None = None,
                 commands: queue.SimpleQueue[dict[str, Any]] | None = None,
                 cancelled: threading.Event | None = None,
                 before_final: Callable[[], None] | None = None) -> None:
        self.mode = mode
        self.gate = gate
        self.local_channel = gate_channels if own_sources else None
        self.aligner = BarrierAligner(gate_channels + (1 if own_sources else 0), mode)
        self.commands: queue.SimpleQueue[dict[str, Any]] = (
            commands if commands is not None else queue.SimpleQueue())
        self._persist = persist
        self._report = report
        self._writes: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write_loop, daemon=True,
                                        name="checkpoint writer")
        self._writer.start()
        self._gate_blocked: set[int] = set()
        #: triggers that arrived while the sources' previous barrier was being aligned
        self._deferred: list[dict[str, Any]] = []
        self._cancelled = cancelled if cancelled is not None else threading.Event()
        self._before_final = before_final
        #: savepoint directories by checkpoint id, from the trigger commands
        self._savepoint_dirs: dict[int, str] = {}
        self._savepoint_known = threading.Condition()

    # -- the run's hooks ---------------------------------------------------------------------

    @property
    def sources_paused(self) -> bool:
        return self.local_channel is not None and self.aligner.is_blocked(self.local_channel)

    def on_turn(self, run: CheckpointedRun) -> None:
        if self._deferred and not self.sources_paused:
            self._trigger(run, self._deferred.pop(0))
        while True:
            try:
                command = self.commands.get_nowait()
            except queue.Empty:
                return
            kind = command["type"]
            if kind == "trigger":
                if command.get("savepoint"):
                    with self._savepoint_known:
                        self._savepoint_dirs[int(command["checkpoint"])] = str(
                            command["savepoint"])
                        self._savepoint_known.notify_all()
                if self.local_channel is None:
                    continue  # barriers reach this task through its inputs
                if self.sources_paused or self._deferred:
                    # the sources' previous barrier still waits for its alignment: this
                    # one comes after it, as a barrier behind a blocked channel would
                    self._deferred.append(command)
                    continue
                self._trigger(run, command)
            elif kind == "complete":
                run.notify_checkpoint_complete(int(command["checkpoint"]))
            elif kind == "stop":
                run.cancel()
                return
            elif kind == "drain":
                run.end_sources()

    def _trigger(self, run: CheckpointedRun, command: dict[str, Any]) -> None:
        assert self.local_channel is not None
        barrier = CheckpointBarrier(int(command["checkpoint"]), int(command["timestamp"]),
                                    BarrierKind.SAVEPOINT if command.get("savepoint")
                                    else BarrierKind.CHECKPOINT)
        self._align(run, self.local_channel, barrier)

    def on_channel_event(self, run: CheckpointedRun, channel: int,
                         event: CheckpointBarrier | EndOfInput) -> None:
        """Gate channel ``channel`` delivered a barrier, or its end (it then counts as
        aligned from now on)."""
        if isinstance(event, EndOfInput):
            if not self.aligner.is_finished(channel):
                self._carry_out(run, self.aligner.on_element(channel, event, _now_ms()))
            return
        self._align(run, channel, event)

    def on_sources_finished(self, run: CheckpointedRun) -> None:
        """The task's own sources ended: their channel counts as aligned."""
        if (self.local_channel is not None
                and not self.aligner.is_finished(self.local_channel)):
            self._carry_out(run, self.aligner.on_element(self.local_channel, EndOfInput(),
                                                         _now_ms()))

    def on_end_of_input(self, run: CheckpointedRun) -> None:
        """Every input ended: end the task's outputs (``before_final``: receivers must see
        the end to reach theirs), tell the coordinator, and wait -- carrying out commands --
        until the final checkpoint completed, a stop, or the job is cancelled. The final
        snapshot is taken at once: the task's state is final, no barrier is needed."""
        if self._before_final is not None:
            self._before_final()
        self._report(InputEnded())
        final: int | None = None
        while not self._cancelled.is_set():
            try:
                command = self.commands.get(timeout=0.05)
            except queue.Empty:
                continue
            kind = command["type"]
            if kind == "final":
                final = int(command["checkpoint"])
                started = time.perf_counter()
                tables = run.snapshot(final)
                kind_of_final = BarrierKind.CHECKPOINT
                if command.get("savepoint"):
                    kind_of_final = BarrierKind.SAVEPOINT
                    with self._savepoint_known:
                        self._savepoint_dirs[final] = str(command["savepoint"])
                self._writes.put((final, tables, 0, (time.perf_counter() - started) * 1000,
                                  kind_of_final))
            elif kind == "complete":
                checkpoint_id = int(command["checkpoint"])
                run.notify_checkpoint_complete(checkpoint_id)
                if final is not None and checkpoint_id >= final:
                    return
            elif kind == "stop":
                return

    def gate_barrier_read(self, channel: int) -> None:
        """The gate handed out a barrier of ``channel``: in exactly-once mode stop reading
        that channel at once, before elements behind the barrier are taken; the aligner
        decides when it is read again (``_sync_gate``)."""
        if self.mode is CheckpointingMode.EXACTLY_ONCE and self.gate is not None:
            self.gate.block(channel)
            self._gate_blocked.add(channel)

    def close(self, timeout_s: float = 30.0) -> None:
        """Finish the writes in flight (their acknowledgements are sent), then stop."""
        self._writes.put(None)
        self._writer.join(timeout_s)

    # -- alignment ---------------------------------------------------------------------------

    def _align(self, run: CheckpointedRun, channel: int, barrier: CheckpointBarrier) -> None:
        if self.aligner.is_finished(channel):
            return
        self._carry_out(run, self.aligner.on_element(channel, barrier, _now_ms()))

    def _carry_out(self, run: CheckpointedRun, actions: tuple[Any, ...]) -> None:
        for action in actions:
            if isinstance(action, Snapshot):
                self._snapshot(run, action)
            elif isinstance(action, Unblock):
                for channel in action.channels:
                    self._unblock(channel)
            # an AbortAlignment needs nothing here: a newer barrier overtook the checkpoint,
            # and completing the newer one subsumes it at the coordinator
        self._sync_gate()

    def _unblock(self, channel: int) -> None:
        if channel != self.local_channel and self.gate is not None:
            self.gate.unblock(channel)
            self._gate_blocked.discard(channel)

    def _sync_gate(self) -> None:
        """Channels the gate holds back but the aligner does not (a dropped barrier, the
        channel that completed an alignment) are read again."""
        for channel in sorted(self._gate_blocked):
            if not self.aligner.is_blocked(channel):
                self._unblock(channel)

    def _snapshot(self, run: CheckpointedRun, action: Snapshot) -> None:
        started = time.perf_counter()
        checkpoint_id = action.barrier.checkpoint_id
        tables = run.snapshot(checkpoint_id)
        run.emit_barrier(action.barrier)
        sync_ms = (time.perf_counter() - started) * 1000
        self._writes.put((checkpoint_id, tables, action.alignment_ms, sync_ms,
                          action.barrier.kind))

    def _savepoint_dir(self, checkpoint_id: int) -> str:
        """The directory of savepoint ``checkpoint_id``: its trigger command reaches this
        task on the control path, its barrier on the data path, in either order."""
        deadline = time.monotonic() + SAVEPOINT_DIR_WAIT_S
        with self._savepoint_known:
            while checkpoint_id not in self._savepoint_dirs:
                if self._cancelled.is_set():
                    raise RuntimeError("the task was cancelled")
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"the directory of savepoint {checkpoint_id} "
                                       "never came")
                self._savepoint_known.wait(0.05)
            return self._savepoint_dirs.pop(checkpoint_id)

    def _write_loop(self) -> None:
        while (item := self._writes.get()) is not None:
            checkpoint_id, tables, alignment_ms, sync_ms, kind = item
            started = time.perf_counter()
            try:
                if kind is BarrierKind.SAVEPOINT:
                    directory = self._savepoint_dir(checkpoint_id)
                    states = {operator_id: self._persist(checkpoint_id, operator_id,
                                                         operator_tables, directory)
                              for operator_id, operator_tables in tables.items()}
                else:
                    states = {operator_id: self._persist(checkpoint_id, operator_id,
                                                         operator_tables)
                              for operator_id, operator_tables in tables.items()}
            except Exception as error:  # a failed upload declines; the job keeps running
                self._report(Decline(checkpoint_id, f"{type(error).__name__}: {error}"))
                continue
            self._report(Acknowledgement(checkpoint_id, states, alignment_ms, sync_ms,
                                         (time.perf_counter() - started) * 1000))


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
