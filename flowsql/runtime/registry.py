"""Physical node type -> operator factory, and the short description used in errors.

The executor never inspects node types itself; adding an operator is one entry here.
"""

from __future__ import annotations

from collections.abc import Callable

from flowsql.errors import ExecutionError
from flowsql.planner import physical as P
from flowsql.planner import physical_statement_set as M
from flowsql.planner import physical_streaming as S
from flowsql.runtime.connectors.implementations import scan_operator
from flowsql.runtime.operator import Operator
from flowsql.runtime.operators.aggregate.hash_aggregate import HashAggregateOperator
from flowsql.runtime.operators.aggregate.sort_aggregate import SortAggregateOperator
from flowsql.runtime.operators.filter import FilterOperator
from flowsql.runtime.operators.join.hash_join import HashJoinOperator
from flowsql.runtime.operators.join.nested_loop_join import NestedLoopJoinOperator
from flowsql.runtime.operators.join.sort_merge_join import SortMergeJoinOperator
from flowsql.runtime.operators.limit import LimitOperator
from flowsql.runtime.operators.over.batch_window_functions import WindowOperator
from flowsql.runtime.operators.project import ProjectOperator
from flowsql.runtime.operators.rank.order_by_limit import TopNOperator
from flowsql.runtime.operators.set_op import SetOpOperator
from flowsql.runtime.operators.shared_subplan import SharedSubplanOperator
from flowsql.runtime.operators.sort import SortOperator
from flowsql.runtime.operators.source.values import ValuesOperator
from flowsql.runtime.operators.table_function import TableFunctionOperator
from flowsql.runtime.operators.window.window_aggregate import WindowAggregateOperator
from flowsql.runtime.operators.window.window_table_function import WindowTableFunctionOperator

Factory = Callable[[P.PhysicalPlan], Operator]


def _lazy(module: str, name: str) -> Factory:
    """A factory importing its operator on first use: streaming operators stay out of the
    import cost of batch queries."""

    def factory(node: P.PhysicalPlan) -> Operator:
        import importlib

        operator_class = getattr(importlib.import_module(module), name)
        return operator_class(node)  # type: ignore[no-any-return]

    return factory


_OPS = "flowsql.runtime.operators"

OPERATORS: dict[type[P.PhysicalPlan], Factory] = {
    # a scan reads through its table's connector
    P.TableScanExec: scan_operator,  # type: ignore[dict-item]
    P.ValuesExec: ValuesOperator,  # type: ignore[dict-item]
    P.FilterExec: FilterOperator,  # type: ignore[dict-item]
    P.ProjectExec: ProjectOperator,  # type: ignore[dict-item]
    P.HashJoinExec: HashJoinOperator,  # type: ignore[dict-item]
    P.NestedLoopJoinExec: NestedLoopJoinOperator,  # type: ignore[dict-item]
    P.HashAggregateExec: HashAggregateOperator,  # type: ignore[dict-item]
    P.SortMergeJoinExec: SortMergeJoinOperator,  # type: ignore[dict-item]
    P.SortAggregateExec: SortAggregateOperator,  # type: ignore[dict-item]
    P.WindowExec: WindowOperator,  # type: ignore[dict-item]
    P.SortExec: SortOperator,  # type: ignore[dict-item]
    P.TopNExec: TopNOperator,  # type: ignore[dict-item]
    P.LimitExec: LimitOperator,  # type: ignore[dict-item]
    P.SetOpExec: SetOpOperator,  # type: ignore[dict-item]
    P.WindowTableFunctionExec: WindowTableFunctionOperator,  # type: ignore[dict-item]
    P.WindowAggregateExec: WindowAggregateOperator,  # type: ignore[dict-item]
    P.TableFunctionExec: TableFunctionOperator,  # type: ignore[dict-item]
    P.SharedSubplanExec: SharedSubplanOperator,  # type: ignore[dict-item]
    P.ReuseSubplanExec: SharedSubplanOperator,  # type: ignore[dict-item]
    S.WatermarkAssignerExec: _lazy(f"{_OPS}.watermark.watermark_assigner",
                                   "WatermarkAssignerOperator"),
    S.ProctimeWatermarkExec: _lazy(f"{_OPS}.watermark.proctime_watermark",
                                   "ProctimeWatermarkOperator"),
    S.GroupAggregateExec: _lazy(f"{_OPS}.aggregate.changelog_user_aggregate",
                                "group_aggregate_operator"),
    S.RankExec: _lazy(f"{_OPS}.rank.streaming_rank", "RankOperator"),
    S.StreamJoinExec: _lazy(f"{_OPS}.join.stream_join", "StreamJoinOperator"),
    S.IntervalJoinExec: _lazy(f"{_OPS}.join.interval_join", "IntervalJoinOperator"),
    S.WindowJoinExec: _lazy(f"{_OPS}.join.window_join", "WindowJoinOperator"),
    S.LookupJoinExec: _lazy(f"{_OPS}.join.lookup_join", "LookupJoinOperator"),
    S.WindowedAggregateExec: _lazy(f"{_OPS}.window.cascading_window_aggregate",
                                   "WindowedAggregateOperator"),
    S.OverAggregateExec: _lazy(f"{_OPS}.over.over_aggregate", "OverAggregateOperator"),
    S.SinkExec: _lazy(f"{_OPS}.sink.connector_sink", "SinkOperator"),
    M.SharedScanExec: _lazy(f"{_OPS}.source.shared_scan", "SharedScanOperator"),
    M.StatementSetExec: _lazy(f"{_OPS}.source.shared_scan", "StatementSetOperator"),
}

# What distinguishes one node of a type from another in an error message.
_DETAILS: dict[type[P.PhysicalPlan], Callable[[P.PhysicalPlan], str]] = {
    P.TableScanExec: lambda n: f"table {n.table.name}",  # type: ignore[attr-defined]
    P.HashJoinExec: lambda n: f"{n.kind} join",  # type: ignore[attr-defined]
    P.NestedLoopJoinExec: lambda n: f"{n.kind} join",  # type: ignore[attr-defined]
    P.SortMergeJoinExec: lambda n: f"{n.kind} join",  # type: ignore[attr-defined]
    P.SetOpExec: lambda n: f"{n.kind}{' all' if n.all else ''}",  # type: ignore[attr-defined]
    P.WindowTableFunctionExec: lambda n: n.shape.describe(),  # type: ignore[attr-defined]
    P.WindowAggregateExec: lambda n: n.shape.describe(),  # type: ignore[attr-defined]
    P.TableFunctionExec: lambda n: n.function.name,  # type: ignore[attr-defined]
    P.SharedSubplanExec: lambda n: f"#{n.share_id}",  # type: ignore[attr-defined]
    P.ReuseSubplanExec: lambda n: f"#{n.share_id}",  # type: ignore[attr-defined]
    S.StreamJoinExec: lambda n: f"{n.kind} join",  # type: ignore[attr-defined]
    S.IntervalJoinExec: lambda n: f"{n.kind} interval join",  # type: ignore[attr-defined]
    S.WindowJoinExec: lambda n: f"{n.kind} window join",  # type: ignore[attr-defined]
    S.LookupJoinExec: lambda n: f"{n.kind} lookup join",  # type: ignore[attr-defined]
    S.SinkExec: lambda n: f"table {n.table.name}",  # type: ignore[attr-defined]
    M.SharedScanExec: lambda n: f"table {n.group.scan.table.name}",  # type: ignore[attr-defined]
}


def create_operator(node: P.PhysicalPlan) -> Operator:
    factory = OPERATORS.get(type(node))
    if factory is None:
        raise ExecutionError(f"no operator implements {type(node).__name__}")
    return factory(node)


def describe(node: P.PhysicalPlan) -> str:
    """e.g. ``HashJoinExec (inner join)``."""
    detail = _DETAILS.get(type(node))
    name = type(node).__name__
    return f"{name} ({detail(node)})" if detail else name
