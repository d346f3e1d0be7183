"""Which streaming GROUP BY (a changelog aggregate) may call user-defined aggregates.

An aggregate that emits updates must be able to take rows back when its input retracts
them, as in Flink, where an AggregateFunction without ``retract`` cannot consume an
updating input. So:

* a function-form user aggregate (one call per group with all of its rows) is never
  admitted: it keeps no state to add rows to;
* a class-form one (``planner.udf_accumulator``) is admitted over an insert-only input,
  and over an updating input only when it has a ``retract`` method;
* the built-in aggregates beside it are ``BESIDE_USER_AGGREGATES``, not DISTINCT.

Every refusal is a PlanError naming the function (and what made the input updating).
"""

from __future__ import annotations

from flowsql.errors import PlanError
from flowsql.planner.physical import HashAggregateExec
from flowsql.planner.physical_streaming import BESIDE_USER_AGGREGATES

__all__ = ["check_user_group_aggregate"]


def check_user_group_aggregate(node: HashAggregateExec, updating: bool,
                               updated_by: str | None) -> None:
    """Raise PlanError unless a changelog GROUP BY can compute ``node``'s aggregates
    over an input that is ``updating`` (made so by ``updated_by``)."""
    for agg in node.aggs:
        function = agg.function
        if function is None:
            if agg.name not in BESIDE_USER_AGGREGATES or agg.distinct:
                raise PlanError(
                    f"streaming GROUP BY computes {'DISTINCT ' if agg.distinct else ''}"
                    f"{agg.name} apart from user-defined aggregates: beside them it "
                    f"computes {', '.join(BESIDE_USER_AGGREGATES)} (not DISTINCT); put "
                    "it in a separate query")
        elif not function.accumulator:
            raise PlanError(
                f"streaming GROUP BY cannot compute the user-defined aggregate "
                f"{function.name}: an aggregate that emits updates keeps an accumulator per "
                "group, and a function called once per group with all of its rows keeps "
                "none and has no retract step; declare it as a class with "
                "create_accumulator, accumulate and "
                "get_value (and retract, for an updating input), group by a window "
                "(TUMBLE, HOP, CUMULATE, SESSION) or run the query in batch mode")
        elif updating and not function.retractable:
            raise PlanError(
                f"streaming GROUP BY over an updating input (made so by "
                f"{updated_by or 'an operator below'}) needs aggregates that retract: the "
                f"user-defined aggregate {function.name} has no retract() method; add "
                "one, or aggregate an insert-only input")
