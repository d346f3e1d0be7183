"""Compiling a :class:`UdfCall`: the arguments compile as usual, the call runs the user's
function once per batch (``runtime.user_functions.scalar``).

Folding: a deterministic call whose arguments are all constant is evaluated once at
compile time (as a built-in is); a non-deterministic call never is -- it runs for every
batch, as the clock functions do.
"""

from __future__ import annotations

import pyarrow as pa

from flowsql.errors import FlowSQLError
from flowsql.planner.expressions import UdfCall, render
from flowsql.runtime.expressions.registry import Node, constant_node
from flowsql.runtime.user_functions.scalar import call_scalar

__all__ = ["compile_udf_call"]


def compile_udf_call(call: UdfCall, args: list[Node]) -> Node:
    labels = [render(a) for a in call.args]
    function = call.function

    def run(batch: pa.RecordBatch) -> pa.Array:
        values = [a.run(batch) for a in args]
        return call_scalar(function, values, batch.num_rows, labels)

    node = Node(run, call.dtype)
    if function.hints.deterministic and args and all(a.constant for a in args):
        try:
            return constant_node(run(_ONE_ROW)[0])
        except FlowSQLError:
            return node  # fails again when (and only if) a row reaches it
    return node


_ONE_ROW = pa.record_batch([pa.array([None], pa.null())], names=["_"])
