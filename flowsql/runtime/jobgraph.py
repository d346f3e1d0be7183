"""Job graph: a physical plan with exchanges, cut into stages that run as parallel tasks.

Every exchange other than ``forward`` is a cut. The nodes between cuts form one *stage*: a
tree of operators chained in one task (forward edges, no serialization) whose leaves are
sources (scans, values) or :class:`StageInput` nodes, the receiving ends of the exchanges
that feed it. Each stage has one parallelism and at most one output edge (a plan is a tree),
and the root stage, which hands the result to the caller, is stage 0.

The one exception is a statement set's shared read (``planner.physical_statement_set``):
every :class:`SharedScanExec` leaf of one :class:`ScanGroup` becomes a ``forward`` edge
(subtask ``i`` to subtask ``i``) from one stage that runs the group's scan, so that stage
has several output edges -- Flink's source with several downstream operators. Each such
edge carries only the columns its leaf reads (``JobEdge.columns``). The scan runs with the
job's parallelism, as any scan, and so do the leaves reading it.

Parallelism is derived, not chosen here: scans run with the job's parallelism (each subtask
reads its share of the data), values and whatever a gather feeds run on one subtask, hash,
broadcast and rebalance exchanges feed ``parallelism`` subtasks, and every other node runs
where its inputs run; a ``ReuseSubplanExec`` leaf runs with its stage (the pass that places
it keeps a shared subplan and its readers in one stage, as stages cannot fan out). Inputs
that disagree mean the distribution pass placed exchanges
inconsistently: that is an ExecutionError, never a silent re-partitioning.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Expr
from flowsql.planner.operator_ids import node_operator_ids
from flowsql.planner.physical import (
    ExchangeExec,
    PhysicalPlan,
    ReuseSubplanExec,
    TableScanExec,
    ValuesExec,
)
from flowsql.planner.physical_statement_set import ScanGroup, SharedScanExec
from flowsql.planner.schema import Schema


@dataclass(frozen=True, eq=False)
class StageInput(PhysicalPlan):
    """Leaf of a stage plan: the batches arriving over job edge ``edge``."""

    edge: int
    fields: Schema
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.fields


@dataclass(frozen=True)
class JobEdge:
    """Data from every subtask of stage ``source`` to the subtasks of stage ``target``,
    distributed by ``kind`` (hash on ``keys`` over the source stage's output, broadcast,
    rebalance or gather), or, for ``forward``, from subtask ``i`` to subtask ``i`` only.
    ``columns`` are the positions of the source stage's output columns the edge carries
    (None: all of them)."""

    id: int
    source: int
    target: int
    kind: str
    keys: tuple[Expr, ...]
    columns: tuple[int, ...] | None = None

    def senders_per_receiver(self, source_parallelism: int) -> int:
        """How many channels of this edge each receiving subtask reads."""
        return 1 if self.kind == "forward" else source_parallelism


@dataclass(frozen=True)
class Stage:
    """``plan`` runs as ``parallelism`` subtasks; ``inputs`` are the edge ids of its
    StageInput leaves in increasing order, ``outputs`` its outgoing edges in increasing
    order (none: the root; several: a shared read, see the module docstring).
    ``operator_ids`` names ``plan``'s nodes in pre-order, as the whole plan's stable ids
    (``planner.operator_ids``: a StageInput takes the id of the exchange it replaces),
    so a stage's state is found again whatever the parallelism or the cut into stages."""

    id: int
    plan: PhysicalPlan
    parallelism: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operator_ids: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"stage-{self.id}"

    @property
    def output(self) -> int | None:
        """The outgoing edge of a stage with one, None for the root."""
        if len(self.outputs) > 1:
            raise ExecutionError(f"{self.name} has {len(self.outputs)} output edges")
        return self.outputs[0] if self.outputs else None


@dataclass(frozen=True)
class JobGraph:
    stages: tuple[Stage, ...]
    edges: tuple[JobEdge, ...]

    @property
    def root(self) -> Stage:
        return self.stages[0]


def build_job_graph(plan: PhysicalPlan, parallelism: int) -> JobGraph:
    """Cut ``plan`` at its exchanges (see the module docstring)."""
    if parallelism < 1:
        raise ExecutionError(f"parallelism must be at least 1, got {parallelism}")
    builder = _Builder(parallelism, node_operator_ids(plan))
    builder.stage(plan)
    stages = list(builder.stages)
    for edge in builder.edges:
        source = stages[edge.source]
        stages[edge.source] = replace(source, outputs=(*source.outputs, edge.id))
    return JobGraph(tuple(stages), tuple(builder.edges))


#: the parallelism of a node that runs with whatever its stage runs with
_ANY = 0


class _Builder:
    def __init__(self, parallelism: int, ids: dict[int, str]) -> None:
        self.parallelism = parallelism
        self.ids = ids
        self.stages: list[Stage] = []
        self.edges: list[JobEdge] = []
        #: the stage running each shared read, by group
        self.shared: dict[ScanGroup, int] = {}

    def stage(self, root: PhysicalPlan) -> int:
        """Build the stage rooted at ``root`` (and, recursively, those feeding it)."""
        stage_id = len(self.stages)
        self.stages.append(Stage(stage_id, root, 0, (), ()))  # reserve the id
        inputs: list[int] = []
        ids: list[str] = []
        plan, parallelism = self._within(root, stage_id, inputs, ids)
        if parallelism == _ANY:
            raise ExecutionError("job graph: a stage reads a shared subplan computed in no "
                                 "stage")
        self.stages[stage_id] = Stage(stage_id, plan, parallelism, tuple(sorted(inputs)), (),
                                      tuple(ids))
        return stage_id

    def _within(self, node: PhysicalPlan, stage_id: int, inputs: list[int],
                ids: list[str]) -> tuple[PhysicalPlan, int]:
        """The stage plan below ``node`` and its parallelism; ``ids`` receives the
        operator ids of the stage plan's nodes in pre-order."""
        if isinstance(node, ExchangeExec) and node.kind == "forward":
            return self._within(node.input, stage_id, inputs, ids)
        ids.append(self.ids[id(node)])
        if isinstance(node, ExchangeExec):
            source = self.stage(node.input)
            edge = JobEdge(len(self.edges), source, stage_id, node.kind, node.keys)
            self.edges.append(edge)
            inputs.append(edge.id)
            return (StageInput(edge.id, node.schema, node.est_rows),
                    1 if node.kind == "gather" else self.parallelism)
        if isinstance(node, SharedScanExec):
            source = self._shared_stage(node.group)
            edge = JobEdge(len(self.edges), source, stage_id, "forward", (), _positions(node))
            self.edges.append(edge)
            inputs.append(edge.id)
            return StageInput(edge.id, node.fields, node.est_rows), self.parallelism
        if isinstance(node, TableScanExec):
            return node, self.parallelism
        if isinstance(node, ValuesExec):
            return node, 1
        if isinstance(node, ReuseSubplanExec):
            # runs where the shared subplan it reads runs: in this stage, whose parallelism
            # the other leaves decide
            return node, _ANY
        if not node.inputs:
            raise ExecutionError(f"job graph: no parallelism rule for {type(node).__name__}")
        built = [self._within(child, stage_id, inputs, ids) for child in node.inputs]
        found = {parallelism for _, parallelism in built} - {_ANY} or {_ANY}
        if len(found) != 1:
            raise ExecutionError(f"job graph: the inputs of {type(node).__name__} run with "
                                 f"different parallelisms {sorted(found)}; an exchange is "
                                 "missing")
        return node.with_inputs(tuple(child for child, _ in built)), found.pop()

    def _shared_stage(self, group: ScanGroup) -> int:
        """The stage that runs ``group``'s scan, built when its first leaf is met. Its
        operator id is the one the table's scan has alone, numbered like a second read
        when the plan also reads the table elsewhere, so it is stable across runs."""
        known = self.shared.get(group)
        if known is not None:
            return known
        base = node_operator_ids(group.scan)[id(group.scan)]
        taken = set(self.ids.values())
        label, number = base, 1
        while label in taken:
            number += 1
            label = f"{base}-{number}"
        self.ids[id(group.scan)] = label
        self.shared[group] = self.stage(group.scan)
        return self.shared[group]


def _positions(leaf: SharedScanExec) -> tuple[int, ...]:
    """Where the columns ``leaf`` reads sit in its group's shared read."""
    shared = [f.name for f in leaf.group.scan.fields]
    return tuple(shared.index(f.name) for f in leaf.fields)
