"""share_subplans: identical subplans of a batch plan computed once.

A common table expression or view referenced twice (TPC-H Q15's ``revenue0``: once in the
join, once under ``max``) is bound twice, planned twice and, without this pass, run twice.
After the physical search this pass finds subtrees that compute the same rows and keeps one:
the first occurrence (in pre-order) is wrapped in a :class:`SharedSubplanExec`, every other
occurrence becomes a :class:`ReuseSubplanExec` leaf reading the same buffered output.

Equality is structural, modulo column ids: the binder gives every reference to a CTE or
view fresh column ids (each reference binds the CTE's query again), so two copies differ
only in their ids. A subtree's *shape* (:func:`subplan_shape`) numbers the column ids it
defines in the order they are first met, so two copies have the same shape; display names
and estimates are left out (columns line up by position, names do not reach the operators).
A column referenced but not defined inside the subtree (an outer reference) keeps its real
id, so subtrees reading different outer columns never look alike.

What is shared:

* only subtrees that contain work worth keeping (an aggregate, join, sort, window or set
  operation), or a filtered scan of a large table estimated to keep few rows (table above,
  estimate at most ``_SMALL_FILTERED_SCAN`` rows: decoding and filtering the whole table
  again costs more than buffering the rows kept; TPC-H Q17 and Q20 read the same filtered ``part`` twice, once as the
  reducer of ``reduce_by_semi_join``); other scans, filters and projections are read again
  rather than buffered;
* only deterministic subtrees (``planner.determinism``): a non-deterministic function must
  run as often as the query says;
* only subtrees without exchanges whose copies run in the same stage of a parallel plan:
  the job graph is a tree (a stage has one output edge), so a stage's output cannot fan out
  to two consumers; sharing happens inside one stage (each subtask buffers its share);
* the largest shared subtrees first, so a CTE inside a shared CTE is not shared again.

Streaming plans are not affected: the pass runs in batch mode only (a buffered stream would
need its changelog replayed to every consumer; ``physical_passes`` applies it to batch
plans). ``optimizer.share-subplans`` = false switches it off.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from flowsql.planner.catalog import TableEntry
from flowsql.planner.determinism import is_deterministic
from flowsql.planner.expressions import ColumnRef, Expr
from flowsql.planner.physical import (
    ExchangeExec,
    HashAggregateExec,
    HashJoinExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    ReuseSubplanExec,
    SetOpExec,
    SharedSubplanExec,
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
    TableScanExec,
    TopNExec,
    WindowExec,
)
from flowsql.planner.schema import Field
from flowsql.planner.udf import UserFunction

__all__ = ["share_subplans", "subplan_shape"]

#: node types whose work is worth buffering an output for
_WORTH_SHARING = (HashAggregateExec, SortAggregateExec, HashJoinExec, SortMergeJoinExec,
                  NestedLoopJoinExec, WindowExec, SortExec, TopNExec, SetOpExec)
#: a filtered scan of a table of more rows than this, estimated to keep at most this many,
#: is shared like real work
_SMALL_FILTERED_SCAN = 65_536
#: plan node fields that do not change what a node computes
_IGNORED_FIELDS = frozenset({"est_rows"})


def share_subplans(plan: PhysicalPlan) -> PhysicalPlan:
    """``plan`` with every group of identical, shareable subtrees run once (see the module
    docstring); ``plan`` itself when there is none."""
    next_id = 1 + max((n.share_id for n in _preorder(plan)
                       if isinstance(n, SharedSubplanExec)), default=0)
    while (group := _largest_group(plan)) is not None:
        first, *others = group
        replacements: dict[int, PhysicalPlan] = {
            id(first): SharedSubplanExec(first, next_id, first.est_rows)}
        for other in others:
            replacements[id(other)] = ReuseSubplanExec(next_id, other.schema, other.est_rows)
        plan = _replaced(plan, replacements)
        next_id += 1
    return plan


def _largest_group(plan: PhysicalPlan) -> list[PhysicalPlan] | None:
    """The occurrences (in pre-order) of the largest subtree that appears at least twice
    in one stage and may be shared; None when there is none.

    One bottom-up pass summarizes every subtree (:class:`_Summary`); the full shape, whose
    cost grows with the subtree, is computed only for shareable subtrees whose outline
    another shareable subtree of the same stage repeats -- in most plans none."""
    summaries = _summaries(plan)
    nodes = [(node, stage) for node, stage in _with_stages(plan)
             if summaries[id(node)].shareable]
    outlines: dict[tuple[int, int], int] = {}
    for node, stage in nodes:
        key = (summaries[id(node)].outline, stage)
        outlines[key] = outlines.get(key, 0) + 1
    groups: dict[tuple[Any, int], list[PhysicalPlan]] = {}
    sizes: dict[tuple[Any, int], int] = {}
    for node, stage in nodes:
        if outlines[(summaries[id(node)].outline, stage)] < 2:
            continue  # no other subtree has its outline, so none has its shape
        key = (subplan_shape(node), stage)
        groups.setdefault(key, []).append(node)
        sizes[key] = summaries[id(node)].size
    repeated = [key for key, nodes in groups.items() if len(nodes) > 1]
    if not repeated:
        return None
    return groups[max(repeated, key=lambda key: sizes[key])]


@dataclasses.dataclass(frozen=True)
class _Summary:
    """What :func:`_largest_group` needs of one subtree. ``outline`` numbers the subtree's
    node types, inputs and tables read: two subtrees of equal shape have equal outlines
    (the converse need not hold)."""

    size: int
    outline: int
    shareable: bool


def _summaries(plan: PhysicalPlan) -> dict[int, _Summary]:
    """The summary of every subtree of ``plan``, by node identity, computed bottom-up in
    one pass (a shared input is summarized once)."""
    summaries: dict[int, _Summary] = {}
    # facts of each subtree: (size, outline, worth sharing, no cutting exchange,
    # deterministic)
    facts: dict[int, tuple[int, int, bool, bool, bool]] = {}
    outline_numbers: dict[Any, int] = {}
    stack: list[tuple[PhysicalPlan, bool]] = [(plan, False)]
    while stack:
        node, inputs_done = stack.pop()
        if id(node) in facts:
            continue
        if not inputs_done:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.inputs))
            continue
        below = [facts[id(child)] for child in node.inputs]
        tables = tuple(value.name for value in _field_values(node)
                       if isinstance(value, TableEntry))
        outline_key = (type(node).__name__, tuple(fact[1] for fact in below), tables)
        outline = outline_numbers.setdefault(outline_key, len(outline_numbers))
        size = 1 + sum(fact[0] for fact in below)
        worth = (isinstance(node, _WORTH_SHARING) or _small_filtered_scan(node)
                 or any(fact[2] for fact in below))
        uncut = (not (isinstance(node, ExchangeExec) and node.kind != "forward")
                 and all(fact[3] for fact in below))
        deterministic = _deterministic(node) and all(fact[4] for fact in below)
        facts[id(node)] = (size, outline, worth, uncut, deterministic)
        summaries[id(node)] = _Summary(size, outline, worth and uncut and deterministic)
    return summaries


def _with_stages(plan: PhysicalPlan) -> Iterator[tuple[PhysicalPlan, int]]:
    """Every node in pre-order with the stage it runs in, named by the id of the nearest
    exchange above it that cuts the plan into stages (0: the root's stage)."""
    stack: list[tuple[PhysicalPlan, int]] = [(plan, 0)]
    while stack:
        node, stage = stack.pop()
        yield node, stage
        below = id(node) if isinstance(node, ExchangeExec) and node.kind != "forward" else stage
        stack.extend((child, below) for child in reversed(node.inputs))


def _small_filtered_scan(node: PhysicalPlan) -> bool:
    """Whether ``node`` is a filtered scan of a large table estimated to keep few rows:
    buffering its rows costs less than decoding and filtering the table again."""
    if not (isinstance(node, TableScanExec) and node.filters and node.watermark is None):
        return False
    table_rows = node.table.statistics.row_count if node.table.statistics else None
    return (table_rows is not None and table_rows > _SMALL_FILTERED_SCAN
            and node.est_rows <= _SMALL_FILTERED_SCAN)


def _deterministic(node: PhysicalPlan) -> bool:
    """Whether every expression and function of ``node`` itself is deterministic."""
    for value in _field_values(node):
        if isinstance(value, Expr) and not is_deterministic(value):
            return False
        if isinstance(value, UserFunction) and not value.hints.deterministic:
            return False
    return True


def _field_values(node: PhysicalPlan) -> Iterator[Any]:
    """The values of ``node``'s own fields, tuples flattened; inputs left out."""
    stack: list[Any] = [getattr(node, f.name) for f in dataclasses.fields(node)  # type: ignore[arg-type]
                        if f.name not in _IGNORED_FIELDS]
    while stack:
        value = stack.pop()
        if isinstance(value, tuple):
            stack.extend(value)
        elif not isinstance(value, PhysicalPlan):
            yield value


def subplan_shape(plan: PhysicalPlan) -> Any:
    """A hashable value equal for two subtrees that compute the same rows in the same
    column order, whatever column ids each was given (see the module docstring)."""
    return _Shape().node(plan)


class _Shape:
    """One shape computation: the column ids met so far, numbered in order."""

    def __init__(self) -> None:
        self.ids: dict[int, int] = {}

    def node(self, plan: PhysicalPlan) -> Any:
        # inputs first: they define the columns this node's expressions refer to
        inputs = tuple(self.node(child) for child in plan.inputs)
        children = {id(child) for child in plan.inputs}
        own = tuple(self.value(getattr(plan, f.name))
                    for f in dataclasses.fields(plan)  # type: ignore[arg-type]
                    if f.name not in _IGNORED_FIELDS
                    and id(getattr(plan, f.name)) not in children)
        return (type(plan).__name__, inputs, own)

    def value(self, value: Any) -> Any:
        if isinstance(value, Field):
            number = self.ids.setdefault(value.cid, len(self.ids))
            return ("field", number, str(value.dtype), value.nullable)
        if isinstance(value, ColumnRef):
            if value.cid not in self.ids:  # an outer reference: only the same column is equal
                return ("outer", value.cid, str(value.dtype))
            return ("column", self.ids[value.cid], str(value.dtype))
        if isinstance(value, tuple):
            return tuple(self.value(v) for v in value)
        if isinstance(value, PhysicalPlan):
            return self.node(value)
        if isinstance(value, TableEntry):
            return ("table", value.name, tuple(sorted(value.options.items())))
        if isinstance(value, pa.DataType):
            return str(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return (type(value).__name__,
                    *(self.value(getattr(value, f.name)) for f in dataclasses.fields(value)))
        if isinstance(value, dict):
            return tuple(sorted((str(k), self.value(v)) for k, v in value.items()))
        return (type(value).__name__, _hashable(value))


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _preorder(plan: PhysicalPlan) -> Iterator[PhysicalPlan]:
    stack = [plan]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.inputs))


def _replaced(plan: PhysicalPlan, replacements: dict[int, PhysicalPlan]) -> PhysicalPlan:
    """``plan`` with the nodes named (by identity) in ``replacements`` replaced."""
    found = replacements.get(id(plan))
    if found is not None:
        return found
    inputs = tuple(_replaced(child, replacements) for child in plan.inputs)
    if all(new is old for new, old in zip(inputs, plan.inputs)):
        return plan
    return plan.with_inputs(inputs)

