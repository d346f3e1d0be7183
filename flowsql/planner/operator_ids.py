"""Operator ids: how checkpoints and savepoints name the operators whose state they hold.

An id says what an operator's state is *about*, not where the operator happens to sit, so
that state finds its operator again after a restart, a change of parallelism, or an upgrade
of the query that keeps the stateful part:

* ``<kind>-<digest>``, e.g. ``group-aggregate-5c1f0e2a9b7d``. The digest hashes the
  operator's *signature* -- what defines the meaning of its state: a source's or sink's
  table, an aggregate's group keys, a join's kind and keys, a window's shape, a Top-N's
  partition, order and range -- together with the digests of the stateful operators and
  sources that feed it.
* Stateless operators between them (filters, projections, exchanges, stage boundaries,
  window assignment) are transparent: they pass their input's digest through. So a
  changed projection or filter above or below an aggregate, an exchange added at another
  parallelism, or another cut of the plan into stages leaves every stateful id unchanged.
  Key expressions are read *through* the projections below them (``GROUP BY k`` over
  ``SELECT v % 5 AS k`` is ``v % 5``), so a projection that changes what a key means does
  change the id.
* What is *not* in a signature can change without changing the id, and is then judged by
  the state's schema when a savepoint is restored: an aggregate's functions (an added
  function adds accumulator columns), the columns a source reads, a sink's columns.
* Two operators with the same id in one plan (a self-join reads the same table twice)
  are told apart by their order in the plan: the second gets ``-2``, and so on.

The digest is SHA-256 over a canonical JSON text of names and rendered expressions
(``render`` shows columns by name, never by planner-internal ids), so the same SQL gives
the same ids in every process and run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from flowsql.planner.expressions import Expr, render, replace_columns
from flowsql.planner.physical import (
    ExchangeExec,
    FilterExec,
    PhysicalPlan,
    ProjectExec,
    TableFunctionExec,
    TableScanExec,
    ValuesExec,
    WindowAggregateExec,
    WindowTableFunctionExec,
)
from flowsql.planner.physical_statement_set import SharedScanExec
from flowsql.planner.physical_streaming import (
    GroupAggregateExec,
    IntervalJoinExec,
    LookupJoinExec,
    OverAggregateExec,
    ProctimeWatermarkExec,
    RankExec,
    SinkExec,
    StreamJoinExec,
    WatermarkAssignerExec,
    WindowedAggregateExec,
    WindowJoinExec,
)

#: hex digits of the digest in an id
DIGEST_LENGTH = 12


def operator_ids(plan: PhysicalPlan) -> list[str]:
    """The ids of ``plan``'s operators in pre-order (the node, then its inputs in order),
    the order in which a run builds its operators."""
    assigned = node_operator_ids(plan)
    ids: list[str] = []

    def visit(node: PhysicalPlan) -> None:
        ids.append(assigned[id(node)])
        for child in node.inputs:
            visit(child)

    visit(plan)
    return ids


def node_operator_ids(plan: PhysicalPlan) -> dict[int, str]:
    """``id(node) -> operator id`` for every node of ``plan`` (valid while ``plan`` lives);
    the job graph uses it to give each stage the ids of the nodes it runs. ``plan`` is a
    tree, as the planner builds it: a subquery used twice is planned twice, as two nodes."""
    digests: dict[int, str] = {}
    labels: dict[int, str] = {}

    def digest(node: PhysicalPlan) -> str:
        known = digests.get(id(node))
        if known is not None:
            return known
        inputs = [digest(child) for child in node.inputs]
        kind, signature = describe_state(node)
        if signature is None:  # transparent: the input's meaning passes through
            value = inputs[0] if len(inputs) == 1 else _hash(["stateless", kind, inputs])
        else:
            value = _hash([kind, signature, inputs])
        digests[id(node)] = value
        labels[id(node)] = f"{kind}-{value[:DIGEST_LENGTH]}"
        return value

    digest(plan)
    seen: dict[str, int] = {}
    ids: dict[int, str] = {}

    def number(node: PhysicalPlan) -> None:
        label = labels[id(node)]
        seen[label] = seen.get(label, 0) + 1
        ids[id(node)] = label if seen[label] == 1 else f"{label}-{seen[label]}"
        for child in node.inputs:
            number(child)

    number(plan)
    return ids


def describe_state(node: PhysicalPlan) -> tuple[str, Any]:
    """``(kind, signature)`` of a node; the signature is None for a stateless node that
    passes its input's meaning through."""
    for node_type, (kind, signature) in _SIGNATURES.items():
        if isinstance(node, node_type):
            return (_rank_kind(node) if isinstance(node, RankExec) else kind), signature(node)
    return _kebab(type(node).__name__.removesuffix("Exec")), []


def keeps_state(node: PhysicalPlan) -> bool:
    """Whether ``node``'s operator may keep state (its id matters to a savepoint): every
    node but the transparent ones."""
    return describe_state(node)[1] is not None


def _hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _kebab(name: str) -> str:
    return "".join(f"-{c.lower()}" if c.isupper() and i else c.lower()
                   for i, c in enumerate(name))


def _exprs(exprs: tuple[Expr, ...] | list[Expr]) -> list[str]:
    return [render(e) for e in exprs]


def _keys(source: PhysicalPlan, exprs: tuple[Expr, ...] | list[Expr]) -> list[str]:
    """``exprs`` (over ``source``'s output) rendered in terms of the columns below the
    projections, filters and exchanges that produce ``source``, with their types."""
    resolved = list(exprs)
    node = source
    while isinstance(node, ProjectExec | FilterExec | ExchangeExec):
        if isinstance(node, ProjectExec):
            mapping = {f.cid: e for f, e in zip(node.fields, node.exprs)}
            resolved = [replace_columns(e, mapping) for e in resolved]
        node = node.input
    return [f"{render(e)}: {e.dtype}" for e in resolved]


def _join(node: Any) -> list[Any]:
    return [node.kind, _keys(node.left, node.left_keys), _keys(node.right, node.right_keys)]


def _rank_kind(node: RankExec) -> str:
    if node.window is not None:
        return "window-rank"
    return "deduplicate" if node.time_attribute is not None else "rank"


_Signature = Callable[[Any], Any]

#: per node type: the id's kind and the signature (None: transparent)
_SIGNATURES: dict[type, tuple[str, _Signature]] = {
    FilterExec: ("filter", lambda n: None),
    ProjectExec: ("project", lambda n: None),
    ExchangeExec: ("exchange", lambda n: None),
    WindowTableFunctionExec: ("window-assign", lambda n: None),
    TableFunctionExec: ("table-function", lambda n: None),
    TableScanExec: ("source", lambda n: [n.table.name]),
    # a statement set's leaf of a shared read means what the scan it replaced meant
    SharedScanExec: ("source", lambda n: [n.group.scan.table.name]),
    ValuesExec: ("values", lambda n: [f.name for f in n.fields]),
    SinkExec: ("sink", lambda n: [n.table.name]),
    WatermarkAssignerExec: ("watermark", lambda n: [render(n.time_column)]),
    ProctimeWatermarkExec: ("proctime-watermark", lambda n: [render(n.time_column)]),
    GroupAggregateExec: ("group-aggregate", lambda n: _keys(n.input, n.group_exprs)),
    WindowedAggregateExec: ("windowed-aggregate", lambda n: [
        _keys(n.input, n.group_exprs), _keys(n.input, n.window)]),
    WindowAggregateExec: ("window-aggregate", lambda n: [
        n.shape.describe(), _keys(n.input, [n.time_column]),
        [s if isinstance(s, str) else _keys(n.input, [n.keys[s]])[0] for s in n.group_slots]]),
    StreamJoinExec: ("join", _join),
    IntervalJoinExec: ("interval-join", lambda n: [
        *_join(n), _keys(n.left, [n.left_time]), _keys(n.right, [n.right_time]), n.lower_ms,
        n.upper_ms]),
    WindowJoinExec: ("window-join", lambda n: [*_join(n), _keys(n.left, n.left_window)]),
    LookupJoinExec: ("lookup-join", lambda n: [
        n.kind, _keys(n.input, n.left_keys), _keys(n.table, n.right_keys)]),
    OverAggregateExec: ("over-aggregate", lambda n: [
        _keys(n.input, n.partition_keys), _keys(n.input, [n.time_column]), n.frame,
        n.preceding]),
    RankExec: ("rank", lambda n: [
        _keys(n.input, n.partition_keys),
        [[*_keys(n.input, [k.expr]), k.ascending, k.nulls_first] for k in n.order],
        n.lower, n.upper, None if n.window is None else _keys(n.input, n.window)]),
}
