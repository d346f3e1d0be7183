"""Split an aggregate into a partial step per subtask and a final step that combines the
partial results after an exchange on the group keys (a gather for a global aggregate).

Decomposable aggregates only: sum, count, min, max, any_value, bool_and, bool_or combine
with the same (or a summing) aggregate, and avg becomes a sum and a count combined and
divided at the end. A class-form user-defined aggregate with a ``merge`` method splits
into its PARTIAL step (accumulators, as JSON text) and its FINAL step (merge, then
``get_value``); one without ``merge``, and a DISTINCT aggregate, is not split.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, Call, Cast, ColumnRef, Expr, Literal
from flowsql.planner.physical import HashAggregateExec, PhysicalPlan, ProjectExec
from flowsql.planner.schema import Field, Schema
from flowsql.planner.udf import FINAL, PARTIAL

#: aggregates whose partial results combine with the same (or a summing) aggregate
COMBINE = {"sum": "sum", "count": "sum", "count_star": "sum", "min": "min", "max": "max",
           "any_value": "any_value", "bool_and": "bool_and", "bool_or": "bool_or"}


def splittable(node: HashAggregateExec) -> bool:
    """Whether every aggregate of ``node`` has a partial and a combining form."""
    return all(not a.distinct and (
        a.function.accumulator and a.function.mergeable if a.function is not None
        else a.name in COMBINE or a.name == "avg") for a in node.aggs)


@dataclass(frozen=True)
class AggregateSplit:
    """The two halves of a split aggregate: ``partial`` over the original input,
    ``exchange_keys`` (the partial group columns; empty for a global aggregate) and
    ``final`` over the exchanged partial rows, whose output is the original's schema."""

    node: HashAggregateExec
    partial_groups: Schema
    partial_aggs: tuple[AggCall, ...]
    partial_fields: Schema
    final_aggs: tuple[AggCall, ...]
    final_fields: Schema
    outputs: tuple[Expr, ...]

    @property
    def exchange_keys(self) -> tuple[Expr, ...]:
        return tuple(f.ref() for f in self.partial_groups)

    def partial(self, child: PhysicalPlan) -> HashAggregateExec:
        return HashAggregateExec(child, self.node.group_exprs, self.partial_groups,
                                 self.partial_aggs, self.partial_fields, self.node.est_rows)

    def final(self, exchanged: PhysicalPlan) -> list[PhysicalPlan]:
        """The final aggregate over ``exchanged`` and, when an average is divided, the
        projection above it; bottom first, each over the one before."""
        node = self.node
        groups = self.exchange_keys
        if all(isinstance(o, ColumnRef) for o in self.outputs):
            aggs = tuple(replace(a, dtype=f.dtype) for a, f in zip(self.final_aggs,
                                                                    node.agg_fields))
            return [HashAggregateExec(exchanged, groups, node.group_fields, aggs,
                                      node.agg_fields, node.est_rows)]
        final = HashAggregateExec(exchanged, groups, node.group_fields, self.final_aggs,
                                  self.final_fields, node.est_rows)
        exprs = (*(f.ref() for f in node.group_fields), *self.outputs)
        return [final, ProjectExec(final, exprs, node.schema, node.est_rows)]


def split_aggregate(node: HashAggregateExec) -> AggregateSplit:
    """The split of a ``splittable`` aggregate."""
    partial_groups = tuple(Field.fresh(f.name, f.dtype, f.nullable) for f in node.group_fields)
    partial_aggs: list[AggCall] = []
    partial_fields: list[Field] = []
    final_aggs: list[AggCall] = []
    final_fields: list[Field] = []
    outputs: list[Expr] = []

    def add(agg: AggCall, name: str) -> ColumnRef:
        """Compute ``agg`` per subtask and combine it after the exchange."""
        field = Field.fresh(name, agg.dtype)
        partial_aggs.append(agg)
        partial_fields.append(field)
        combined = Field.fresh(name, agg.dtype)
        final_aggs.append(AggCall(COMBINE[agg.name], (field.ref(),), agg.dtype))
        final_fields.append(combined)
        return combined.ref()

    for agg, target in zip(node.aggs, node.agg_fields):
        if agg.function is not None:
            field = Field.fresh(f"{target.name}_acc", T.STRING)
            partial_aggs.append(replace(agg, dtype=T.STRING,
                                        function=replace(agg.function, step=PARTIAL)))
            partial_fields.append(field)
            combined = Field.fresh(target.name, agg.dtype)
            final_aggs.append(AggCall(agg.name, (field.ref(),), agg.dtype,
                                      function=replace(agg.function, step=FINAL)))
            final_fields.append(combined)
            outputs.append(combined.ref())
        elif agg.name == "avg":
            arg = agg.args[0]
            as_float = arg if arg.dtype.equals(T.FLOAT64) else Cast(arg, T.FLOAT64)
            total = add(AggCall("sum", (as_float,), T.FLOAT64, filter=agg.filter),
                        f"{target.name}_sum")
            count = add(AggCall("count", (arg,), T.INT64, filter=agg.filter),
                        f"{target.name}_count")
            # a group whose values are all NULL has count 0: its average is NULL
            nonzero = Call("nullif", (count, Literal(0, T.INT64)), T.INT64)
            ratio: Expr = Call("divide", (total, nonzero), T.FLOAT64)
            outputs.append(ratio if agg.dtype.equals(T.FLOAT64) else Cast(ratio, agg.dtype))
        else:
            outputs.append(add(agg, target.name))
    return AggregateSplit(node, partial_groups, tuple(partial_aggs), tuple(partial_fields),
                          tuple(final_aggs), tuple(final_fields), tuple(outputs))
