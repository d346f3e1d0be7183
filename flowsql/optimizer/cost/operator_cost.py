"""The physical cost of one operator: CPU, network and spill, in estimated seconds on one
subtask.

A physical plan's cost is the sum of its operators' costs (each excludes its inputs), plus
what the search adds once per plan (starting a parallel job and its stages). Costs are
elapsed times: an operator that runs on P subtasks sees its share of the rows on each, so
a partitioned operator costs about 1/P of the same operator on one subtask, while a
broadcast build side costs the whole side on every subtask.

* CPU: rows processed per operator kind (``CostConstants``), plus the expressions the
  operator evaluates per row, with UDF calls weighted by their ``cost_per_row`` hint.
* network: bytes an exchange moves into one subtask (rows x estimated row width; a
  broadcast delivers all of its input to every subtask), plus the start of the stage the
  exchange adds to the job.
* memory: a hash table, aggregate table or sort buffer above ``execution.memory-budget``
  spills: the bytes are written to disk and read back.

The model computes no selectivities: it combines the row estimates the plan carries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from flowsql.optimizer.cost.constants import CostConstants
from flowsql.optimizer.cost.row_width import row_width
from flowsql.optimizer.cost.udf_cost import node_expression_units
from flowsql.planner.physical import (
    ExchangeExec,
    FilterExec,
    HashAggregateExec,
    HashJoinExec,
    LimitExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    ProjectExec,
    SetOpExec,
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
    TableScanExec,
    TopNExec,
    ValuesExec,
    WindowExec,
)


@dataclass(frozen=True)
class Cost:
    """Estimated seconds, by component; ``total`` is what the search compares."""

    cpu: float = 0.0
    network: float = 0.0
    spill: float = 0.0

    @property
    def total(self) -> float:
        return self.cpu + self.network + self.spill

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.cpu + other.cpu, self.network + other.network,
                    self.spill + other.spill)


ZERO = Cost()


@dataclass(frozen=True)
class OperatorContext:
    """Where an operator runs: ``input_shares[i]`` is the fraction of input i's rows one
    subtask sees (1 on one subtask or for a broadcast input, 1/P for a partitioned one),
    ``output_share`` the fraction of the operator's output one subtask produces, and
    ``memory_budget`` the bytes a blocking operator may hold per subtask."""

    constants: CostConstants
    input_shares: tuple[float, ...] = ()
    output_share: float = 1.0
    memory_budget: float = float("inf")

    def input_rows(self, node: PhysicalPlan, index: int) -> float:
        share = self.input_shares[index] if index < len(self.input_shares) else 1.0
        return node.inputs[index].est_rows * share


def operator_cost(node: PhysicalPlan, ctx: OperatorContext) -> Cost:
    """Own cost of ``node`` on one subtask (see the module docstring)."""
    c = ctx.constants
    out = node.est_rows * ctx.output_share
    rows_in = [ctx.input_rows(node, i) for i in range(len(node.inputs))]
    first = rows_in[0] if rows_in else out
    expressions = node_expression_units(node) * c.expression_row
    if isinstance(node, TableScanExec):
        return Cost(cpu=out * (row_width(node.schema) * c.scan_byte + expressions))
    if isinstance(node, ValuesExec):
        return Cost(cpu=out * c.pass_row)
    if isinstance(node, (FilterExec, ProjectExec, LimitExec)):
        return Cost(cpu=first * (c.pass_row + expressions))
    if isinstance(node, ExchangeExec):
        # every exchange cuts the job into one more stage, whose tasks start and connect
        return Cost(cpu=c.stage, network=out * row_width(node.schema) * c.network_byte)
    if isinstance(node, HashJoinExec):
        build, probe = (0, 1) if node.build_side == "left" else (1, 0)
        table = rows_in[build] * row_width(node.inputs[build].schema)
        return Cost(cpu=rows_in[build] * c.hash_build_row + rows_in[probe] * c.hash_probe_row
                    + (rows_in[0] + rows_in[1]) * expressions + out * c.join_output_row,
                    spill=_spill(table, ctx))
    if isinstance(node, SortMergeJoinExec):
        return Cost(cpu=(rows_in[0] + rows_in[1]) * (c.merge_row + expressions)
                    + out * c.join_output_row)
    if isinstance(node, NestedLoopJoinExec):
        pairs = rows_in[0] * rows_in[1]
        return Cost(cpu=pairs * (c.loop_pair + expressions) + out * c.join_output_row)
    if isinstance(node, HashAggregateExec):
        return Cost(cpu=first * (c.aggregate_row + expressions),
                    spill=_spill(out * row_width(node.schema), ctx))
    if isinstance(node, SortAggregateExec):
        return Cost(cpu=first * (c.sort_aggregate_row + expressions))
    if isinstance(node, SortExec):
        return Cost(cpu=_sort(first, c), spill=_spill(first * row_width(node.schema), ctx))
    if isinstance(node, TopNExec):
        kept = node.limit + node.offset
        return Cost(cpu=first * c.pass_row + first * math.log2(kept + 2) * c.sort_row_log)
    if isinstance(node, WindowExec):
        return Cost(cpu=first * c.window_row + _sort(first, c),
                    spill=_spill(first * row_width(node.schema), ctx))
    if isinstance(node, SetOpExec):
        per_row = c.pass_row if node.kind == "union" and node.all else c.aggregate_row
        return Cost(cpu=sum(rows_in) * per_row)
    return Cost(cpu=sum(rows_in) * c.pass_row + out * c.pass_row)


def _sort(rows: float, c: CostConstants) -> float:
    return rows * math.log2(max(rows, 2.0)) * c.sort_row_log


def _spill(held_bytes: float, ctx: OperatorContext) -> float:
    """Writing and reading back what exceeds the memory budget (all of it: a spilling
    operator writes its whole state in runs)."""
    if held_bytes <= ctx.memory_budget:
        return 0.0
    return 2.0 * held_bytes * ctx.constants.spill_byte
