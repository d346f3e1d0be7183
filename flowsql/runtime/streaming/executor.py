"""Single-process streaming execution: the operator tree driven by pushed elements.

The batch executor pulls one input of an operator to its end before the next; a stream
never ends, so here every source is polled in turn and each element it yields is pushed
through the tree at once. An element is a record batch, a :class:`Watermark`, or the end
of an input. For each operator the runner:

* calls ``process_batch`` for batches and routes what it returns downstream -- batches to
  the consumer, and :class:`Watermark` objects (only a watermark assigner makes them) as
  watermarks;
* combines the watermarks of its inputs (the minimum, ``WatermarkMerger``), calls
  ``process_watermark`` when the combined watermark advances, routes its output, then
  forwards the watermark (unless the operator makes its own);
* at the end of an input sends the final watermark (+infinity, as a bounded source does in
  Flink's streaming mode), then ``end_input``; after the last input it closes the operator
  and ends its consumer's input.

Sources are operators without inputs: :class:`PolledSource` ones are asked what they have
now (``poll``), other sources yield one batch per turn from ``produce``. When no source
had anything, the runner waits briefly in the poll of the first unfinished one. Output
batches of the root are yielded as they come (a changelog when the plan is updating), so
``Session.sql(q).stream()`` shows results while the job runs; stopping the iteration (or
``cancel``) closes every operator.

The same runner drives one subtask of a stage on a worker process (the parallel runtime):
there the stage's exchange inputs are polled sources, ``operators`` builds them, and
``elements()`` also yields the watermarks that leave the stage's root, in order with its
batches, so the stage task can send both downstream.

Per operator the runner counts records in and out and keeps the current watermark; with
each operator's own metrics (late records dropped, parse errors ignored) they form the
job's metrics.

Checkpoints (:class:`RunCheckpointing`, given by the task that owns the run): every
operator has an id (``planner.operator_ids``: stable, from what its state means).

* ``checkpointing.on_turn`` runs before every turn (triggers, completion notices);
* a barrier or channel end an exchange input returns (``ChannelEvent``) goes to
  ``checkpointing.on_channel_event`` in order with the batches around it;
* the task's own sources are not polled while ``checkpointing.sources_paused`` (an
  alignment waits for an exchange input); ``on_sources_finished`` says when the last of
  them ended (exchange inputs, ``exchange_input = True``, are not the task's own);
* ``snapshot`` takes every operator's state between two elements, ``emit_barrier``
  queues the barrier behind the output produced before it;
* ``on_end_of_input`` runs once every input ended: the final checkpoint. Operators are
  closed only after it, so a two-phase-commit sink commits its last rows when it completes;
* ``end_sources`` (a stop with drain) ends the task's own sources at the next turn as if
  their input ended: the final watermark follows, so every window fires.

A restored run calls each operator's ``restore_state`` right after ``open``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from flowsql.errors import FlowSQLError
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.operator_ids import operator_ids as plan_operator_ids
from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.events import MAX_WATERMARK, CheckpointBarrier, EndOfInput, Watermark
from flowsql.runtime.executor import _guarded, _job
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.contract import PolledSource, Source
from flowsql.runtime.registry import create_operator, describe
from flowsql.runtime.time.watermark_merger import WatermarkMerger
from flowsql.runtime.time.watermarks import MIN_WATERMARK

#: longest wait inside one source poll when the whole job is idle
IDLE_WAIT_S = 0.02


class RunCheckpointing(Protocol):
    """What a run asks of the checkpointing of the task it belongs to."""

    @property
    def sources_paused(self) -> bool: ...

    def on_turn(self, run: StreamingRun) -> None: ...

    def on_channel_event(self, run: StreamingRun, channel: int,
                         event: CheckpointBarrier | EndOfInput) -> None: ...

    def on_sources_finished(self, run: StreamingRun) -> None: ...

    def on_end_of_input(self, run: StreamingRun) -> None: ...


@dataclass(frozen=True)
class ChannelEvent:
    """A barrier or the end of gate channel ``channel``, as an exchange input read it (in
    order with the batches around it)."""

    channel: int
    event: CheckpointBarrier | EndOfInput


@dataclass
class _Vertex:
    """One operator of the running tree and where its output goes."""

    label: str
    operator_id: str
    node: PhysicalPlan
    operator: Operator
    consumer: _Vertex | None
    consumer_input: int
    merger: WatermarkMerger | None
    open_inputs: set[int]
    records_in: int = 0
    records_out: int = 0
    watermark: int = MIN_WATERMARK
    produced: Iterator[pa.RecordBatch] | None = None
    ended: bool = False
    closed: bool = False
    metrics: dict[str, Any] = field(default_factory=dict)
    gauges: dict[str, Callable[[], int]] = field(default_factory=dict)


class StreamingRun:
    """One execution of a plan in streaming mode; iterate ``batches()`` to drive it."""

    def __init__(self, plan: PhysicalPlan, settings: dict[str, str], *,
                 operators: Callable[[PhysicalPlan], Operator] = create_operator,
                 subtask_index: int = 0, parallelism: int = 1, where: str = "",
                 cancelled: threading.Event | None = None,
                 on_idle: Callable[[], None] | None = None,
                 operator_ids: Sequence[str] | None = None, job_id: str = "local",
                 attempt: int = 0,
                 checkpointing: RunCheckpointing | None = None,
                 restore: Mapping[str, dict[str, pa.Table]] | None = None) -> None:
        """``operators`` builds each node's operator; ``subtask_index``/``parallelism``
        tell the operators which share of the job they are, ``where`` ends their labels
        (e.g. " in subtask 1 of 2 of stage-1"), ``cancelled`` may be shared with a task,
        ``on_idle`` is called whenever a turn found no source with anything to give.
        ``operator_ids`` names the operators in pre-order (default: the plan's stable
        ids, ``planner.operator_ids``), ``job_id``/``attempt`` go to the operators'
        contexts, ``checkpointing`` drives checkpoints (see the module docstring) and
        ``restore`` maps operator ids to the state tables to restore."""
        self.plan = plan
        self._job = _job(settings)
        self._idle_timeout = idle_timeout_ms(settings)
        self._operators = operators
        self._subtask_index = subtask_index
        self._parallelism = parallelism
        self._where = where
        self._vertices: list[_Vertex] = []
        self._sources: list[_Vertex] = []
        self._output: deque[pa.RecordBatch | Watermark | CheckpointBarrier] = deque()
        self._root_watermark = MIN_WATERMARK
        self._cancelled = cancelled if cancelled is not None else threading.Event()
        self._on_idle = on_idle
        self._job_id = job_id
        self._attempt = attempt
        self._checkpointing = checkpointing
        self._restore = restore
        self._end_sources = threading.Event()
        self._ids = list(operator_ids) if operator_ids is not None else plan_operator_ids(plan)
        #: time.monotonic() when a source last produced records
        self.last_input = time.monotonic()
        self.root = self._build(plan, None, 0)

    # -- construction ---------------------------------------------------------------------
    def _build(self, node: PhysicalPlan, consumer: _Vertex | None, index: int) -> _Vertex:
        position = len(self._vertices)
        label = f"{describe(node)} [operator {position + 1}]{self._where}"
        operator: Operator = _guarded(label, self._operators, node)
        n = len(node.inputs)
        merger = WatermarkMerger(n, self._idle_timeout) if n else None
        vertex = _Vertex(label, self._ids[position], node, operator, consumer, index, merger,
                         set(range(n)))
        self._vertices.append(vertex)
        if not n:
            self._sources.append(vertex)
        for i, child in enumerate(node.inputs):
            self._build(child, vertex, i)
        return vertex

    # -- driving --------------------------------------------------------------------------
    def batches(self) -> Iterator[pa.RecordBatch]:
        """The root's output as it is produced; ends when every source ended."""
        for element in self.elements():
            if isinstance(element, pa.RecordBatch):
                yield element

    def elements(self) -> Iterator[pa.RecordBatch | Watermark | CheckpointBarrier]:
        """The root's batches and, after the batches that precede them, the watermarks
        that pass the root (each higher than the last) and the checkpoint barriers the
        task emitted (``emit_barrier``)."""
        try:
            for vertex in reversed(self._vertices):  # consumers open after their inputs
                context = OperatorContext(name=vertex.label, settings=self._job.settings,
                                          memory=self._job.memory, metrics=vertex.metrics,
                                          gauges=vertex.gauges,
                                          subtask_index=self._subtask_index,
                                          parallelism=self._parallelism,
                                          job_id=self._job_id, attempt=self._attempt,
                                          checkpointing=self._checkpointing is not None,
                                          operator_id=vertex.operator_id)
                _guarded(vertex.label, vertex.operator.open, context)
            if self._restore is not None:
                for vertex in self._vertices:
                    tables = self._restore.get(vertex.operator_id)
                    if tables is not None:
                        _guarded(vertex.label, vertex.operator.restore_state, tables)
            active = list(self._sources)
            checkpointing = self._checkpointing
            while active and not self._cancelled.is_set():
                if checkpointing is not None:
                    checkpointing.on_turn(self)
                    yield from self._drain()
                if self._end_sources.is_set():
                    yield from self._end_own_sources(active)
                progressed = False
                for source in list(active):
                    own = not getattr(source.operator, "exchange_input", False)
                    if checkpointing is not None and own and checkpointing.sources_paused:
                        continue  # the task's own sources wait while an alignment is pending
                    if self._poll(source, 0.0):
                        progressed = True
                    if source.ended:
                        active.remove(source)
                        if checkpointing is not None and own and not any(
                                not getattr(s.operator, "exchange_input", False)
                                for s in active):
                            checkpointing.on_sources_finished(self)
                    yield from self._drain()
                if not progressed and active:
                    self._idle(active)
                    yield from self._drain()
            if checkpointing is not None and not active and not self._cancelled.is_set():
                yield from self._drain()
                checkpointing.on_end_of_input(self)  # the final checkpoint
                yield from self._drain()
        finally:
            self._close_all()

    def cancel(self) -> None:
        """Stop at the next turn (from another thread); ``batches`` then ends."""
        self._cancelled.set()

    def end_sources(self) -> None:
        """End the task's own sources at the next turn, as if their input ended (from
        another thread); exchange inputs end when their senders do."""
        self._end_sources.set()

    def _end_own_sources(self, active: list[_Vertex]
                         ) -> Iterator[pa.RecordBatch | Watermark | CheckpointBarrier]:
        own = [s for s in active if not getattr(s.operator, "exchange_input", False)]
        for source in own:
            active.remove(source)
            self._finish(source)
            yield from self._drain()
        if own and self._checkpointing is not None:
            self._checkpointing.on_sources_finished(self)
            yield from self._drain()

    # -- checkpoints ----------------------------------------------------------------------
    def snapshot(self, checkpoint_id: int) -> dict[str, dict[str, pa.Table]]:
        """Every operator's state by operator id, taken between two elements."""
        return {v.operator_id: _guarded(v.label, v.operator.snapshot_state, checkpoint_id)
                for v in self._vertices}

    def emit_barrier(self, barrier: CheckpointBarrier) -> None:
        """Queue ``barrier`` behind everything the root produced so far."""
        self._output.append(barrier)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for vertex in self._vertices:
            if not vertex.closed:
                _guarded(vertex.label, vertex.operator.notify_checkpoint_complete,
                         checkpoint_id)

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def _drain(self) -> Iterator[pa.RecordBatch | Watermark | CheckpointBarrier]:
        while self._output:
            yield self._output.popleft()

    def _idle(self, active: list[_Vertex]) -> None:
        """Nothing moved: wait in one poll, then let idle inputs stop holding back time."""
        self._poll(active[0], IDLE_WAIT_S)
        if self._on_idle is not None:
            self._on_idle()
        for vertex in self._vertices:
            if vertex.ended:
                continue
            on_idle = getattr(vertex.operator, "on_idle", None)
            if on_idle is not None:
                self._route(vertex, _guarded(vertex.label, _listed, on_idle))
            if vertex.merger is not None and self._idle_timeout:
                combined = vertex.merger.check_idle()
                if combined is not None:
                    self._advance(vertex, combined)

    def _poll(self, source: _Vertex, wait: float) -> bool:
        """One turn of a source; True when it produced something or ended."""
        operator = source.operator
        if isinstance(operator, PolledSource):
            polled = _guarded(source.label, operator.poll, wait)
            if polled is None:
                self._finish(source)
                return True
            if any(isinstance(e, pa.RecordBatch) for e in polled):
                self.last_input = time.monotonic()
            self._route(source, polled)
            return bool(polled)
        if source.produced is None:
            assert isinstance(operator, Source), f"{source.label} is not a source"
            source.produced = operator.produce()
        batch = _guarded(source.label, next, source.produced, None)
        if batch is None:
            self._finish(source)
        else:
            self.last_input = time.monotonic()
            self._route(source, [batch])
        return True

    # -- element routing ------------------------------------------------------------------
    def _route(self, vertex: _Vertex,
               emitted: Iterable[pa.RecordBatch | Watermark | ChannelEvent]) -> None:
        """Send what ``vertex`` emitted to its consumer (or the output)."""
        for element in emitted:
            if isinstance(element, Watermark):
                self._forward_watermark(vertex, element.timestamp)
            elif isinstance(element, ChannelEvent):
                if self._checkpointing is not None:
                    self._checkpointing.on_channel_event(self, element.channel, element.event)
            elif element.num_rows:
                vertex.records_out += element.num_rows
                if vertex.consumer is None:
                    self._output.append(element)
                else:
                    self._push_batch(vertex.consumer, vertex.consumer_input, element)

    def _push_batch(self, vertex: _Vertex, input: int, batch: pa.RecordBatch) -> None:
        vertex.records_in += batch.num_rows
        assert vertex.merger is not None
        vertex.merger.on_records(input)
        self._route(vertex, _guarded(vertex.label, lambda: list(
            vertex.operator.process_batch(input, batch))))

    def _forward_watermark(self, vertex: _Vertex, timestamp: int) -> None:
        consumer = vertex.consumer
        if consumer is None:
            if timestamp > self._root_watermark:
                self._root_watermark = timestamp
                self._output.append(Watermark(timestamp))
            return
        assert consumer.merger is not None
        combined = consumer.merger.on_watermark(vertex.consumer_input, timestamp)
        if combined is not None:
            self._advance(consumer, combined)

    def _advance(self, vertex: _Vertex, watermark: int) -> None:
        vertex.watermark = watermark
        self._route(vertex, _guarded(vertex.label, lambda: list(
            vertex.operator.process_watermark(watermark))))
        if getattr(vertex.operator, "forwards_watermarks", True):
            self._forward_watermark(vertex, watermark)

    def _finish(self, vertex: _Vertex) -> None:
        """``vertex`` will emit nothing more: end its consumer's input. With checkpoints
        the operator stays open until the final checkpoint (its state is snapshotted)."""
        vertex.ended = True
        if self._checkpointing is None:
            self._close(vertex)
        consumer = vertex.consumer
        if consumer is None:
            return
        index = vertex.consumer_input
        self._forward_watermark(vertex, MAX_WATERMARK)  # an ended input holds nothing back
        self._route(consumer, _guarded(consumer.label, lambda: list(
            consumer.operator.end_input(index))))
        consumer.open_inputs.discard(index)
        if not consumer.open_inputs:
            self._finish(consumer)

    def _close(self, vertex: _Vertex) -> None:
        if not vertex.closed:
            vertex.closed = True
            _guarded(vertex.label, vertex.operator.close)

    def _close_all(self) -> None:
        errors = []
        for vertex in self._vertices:
            try:
                self._close(vertex)
            except FlowSQLError as exc:
                errors.append(exc)
        if errors and not self._cancelled.is_set():
            raise errors[0]

    # -- metrics --------------------------------------------------------------------------
    def metrics(self) -> list[dict[str, Any]]:
        """Per operator: label, records in/out, current watermark (None before the first),
        the operator's own counters and its gauges read now (``state_rows`` and
        ``state_bytes`` of an operator with keyed state)."""
        return [{"operator": v.label, "records_in": v.records_in,
                 "records_out": v.records_out,
                 "watermark": None if v.watermark == MIN_WATERMARK else v.watermark,
                 **v.metrics, **{name: gauge() for name, gauge in v.gauges.items()}}
                for v in self._vertices]


def _listed(hook: Any) -> list[Any]:
    return list(hook())


def idle_timeout_ms(settings: dict[str, str]) -> int | None:
    """``table.exec.source.idle-timeout`` in milliseconds; None when it is 0 (off)."""
    return SettingValues(settings).duration_ms("table.exec.source.idle-timeout") or None
