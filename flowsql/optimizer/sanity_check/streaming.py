"""Sanity check of a streaming plan: no blocking batch operator (sort, hash aggregate, hash
or nested-loop join, Top-N, window, distinct set operation), which emits only at the end of
its input, above an input that never ends; and no updating input (+I/-U/+U/-D) into an
operator or sink that accepts inserts only (window TVF, window and windowed aggregates,
interval and window joins, OVER, Top-N / deduplication, LIMIT, append-only sinks).

Both facts are recomputed bottom-up here, independently of the streaming planning pass
(``optimizer/streaming``) that promises them.
"""

from __future__ import annotations

from flowsql.errors import PlanError
from flowsql.optimizer.sanity_check.naming import fail, node_name
from flowsql.optimizer.streaming import is_bounded_table
from flowsql.planner.config.connectors import connector_of
from flowsql.planner.physical import (
    HashAggregateExec,
    HashJoinExec,
    LimitExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    SetOpExec,
    SortExec,
    TableScanExec,
    TopNExec,
    WindowAggregateExec,
    WindowExec,
    WindowTableFunctionExec,
)
from flowsql.planner.physical_streaming import (
    GroupAggregateExec,
    IntervalJoinExec,
    OverAggregateExec,
    RankExec,
    SinkExec,
    StreamJoinExec,
    WindowedAggregateExec,
    WindowJoinExec,
)

__all__ = ["check_insert_only_sources", "check_streaming"]


def check_streaming(plan: PhysicalPlan) -> None:
    """Raise PlanError naming the first node over an endless or updating input it cannot
    take."""
    _check_streaming(plan, ())


#: batch operators that emit only once their input has ended
_BLOCKING: tuple[type, ...] = (SortExec, HashAggregateExec, HashJoinExec, NestedLoopJoinExec,
                               TopNExec, WindowExec)
#: operators whose output is insert-only whatever their input
_INSERT_ONLY_OUTPUT: tuple[type, ...] = (WindowedAggregateExec, WindowAggregateExec,
                                         IntervalJoinExec, WindowJoinExec, OverAggregateExec)
#: operators that accept insert-only input only
_NEEDS_INSERT_ONLY: tuple[type, ...] = (WindowTableFunctionExec, WindowAggregateExec,
                                        WindowedAggregateExec, OverAggregateExec, RankExec,
                                        IntervalJoinExec, WindowJoinExec, LimitExec)


def _check_streaming(node: PhysicalPlan, path: tuple[str, ...]
                     ) -> tuple[str | None, str | None]:
    """(the first source that never ends below ``node`` or None, the node that makes its
    output updating or None), after checking ``node``'s requirements."""
    inner = (*path, node_name(node))
    facts = [_check_streaming(child, inner) for child in node.inputs]
    unbounded = next((source for source, _ in facts if source is not None), None)
    updated_by = next((by for _, by in facts if by is not None), None)
    if isinstance(node, TableScanExec):
        table = node.table
        bounded = is_bounded_table(table.options, table.statistics.row_count)
        changelog = connector_of(table.options).reads_changelog(table.options)
        return ((None if bounded else f"table '{table.name}'"),
                f"table '{table.name}' (a changelog source)" if changelog else None)
    blocking = isinstance(node, _BLOCKING) or (
        isinstance(node, SetOpExec) and not (node.kind == "union" and node.all))
    if blocking and unbounded is not None:
        raise fail(node, path, f"emits only at the end of its input, but its input "
                   f"({unbounded}) never ends")
    needs_inserts = isinstance(node, _NEEDS_INSERT_ONLY) or (
        isinstance(node, SinkExec)
        and not connector_of(node.table.options).sink_accepts_updates)
    if needs_inserts and updated_by is not None:
        raise fail(node, path, f"accepts insert-only input, but its input is updating "
                   f"(because of {updated_by})")
    return unbounded, _updated_by(node, updated_by)


def check_insert_only_sources(plan: PhysicalPlan) -> None:
    """A batch plan reads inserts only: a changelog source is a PlanError (as in Flink,
    whose batch mode reads insert-only sources)."""
    for child in plan.inputs:
        check_insert_only_sources(child)
    if isinstance(plan, TableScanExec):
        table = plan.table
        if connector_of(table.options).reads_changelog(table.options):
            raise PlanError(f"table '{table.name}' is a changelog source ({table.connector} "
                            f"connector): it can be read in streaming mode only (SET "
                            "'execution.runtime-mode' = 'streaming')")


def _updated_by(node: PhysicalPlan, from_inputs: str | None) -> str | None:
    """Which node makes ``node``'s output updating (None: insert-only)."""
    if isinstance(node, GroupAggregateExec):
        return node_name(node)
    if isinstance(node, StreamJoinExec):
        return (from_inputs or f"{node_name(node)} ({node.kind} join)") if node.updating else None
    if isinstance(node, RankExec):
        return None if node.window is not None else node_name(node)
    if isinstance(node, _INSERT_ONLY_OUTPUT):
        return None
    return from_inputs
