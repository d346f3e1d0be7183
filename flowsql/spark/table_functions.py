"""LATERAL TABLE(f(args)) on Spark: ``mapInArrow`` over the input plus its arguments.

The input DataFrame gets one extra column per argument (the argument expressions, rendered
as Spark expressions); ``mapInArrow`` then runs, in Spark's Python workers, the same
array contract as the local operator (``flowsql.runtime.user_functions.table``, imported by the
generated program, which imports the user's function by its path). Output: the input's
columns followed by the function's, as the physical node's schema says.
"""

from __future__ import annotations

import pyarrow as pa

from flowsql.errors import PlanError
from flowsql.planner import types as T
from flowsql.planner.expressions import render
from flowsql.planner.physical import TableFunctionExec
from flowsql.spark.codegen import Program, call
from flowsql.spark.expressions import Renderer
from flowsql.spark.literals import cast
from flowsql.spark.spark_types import quote_name, spark_type


def compile_table_function(program: Program, node: TableFunctionExec) -> str:
    child = program.compile(node.input)
    r = Renderer(program.column)
    input_names = program.names(node.input.schema)
    arg_names = [f"{input_names[0] if input_names else 'a'}_arg{i}"
                 for i in range(len(node.args))]
    arg_items = [f"{cast(r.render(a), a.dtype)}.alias({n!r})"
                 for a, n in zip(node.args, arg_names)]
    widened = program.assign(call(f"{child}.select", [
        *(f"F.col({n!r})" for n in input_names), *arg_items]))
    out_names = program.names(node.schema)
    schema = ", ".join(f"{quote_name(n)} {spark_type(f.dtype)}"
                       for n, f in zip(out_names, node.schema))
    fields = "[" + ", ".join(f"({n!r}, {_arrow_type_source(t)})"
                             for n, t in node.function.result_fields) + "]"
    mapper = (f"__import__('flowsql.runtime.user_functions.table', fromlist=['x'])"
              f".spark_table_function({node.function.name!r}, {node.function.path!r}, "
              f"{fields}, {len(input_names)}, {node.outer}, {out_names!r}, "
              f"{[render(a) for a in node.args]!r})")
    return program.assign(f"{widened}.mapInArrow({mapper}, {schema!r})")


def _arrow_type_source(t: pa.DataType) -> str:
    """Python source building ``t`` with ``__import__('pyarrow')`` (the program imports
    pyarrow nowhere else)."""
    pa_ = "__import__('pyarrow')"
    simple = {pa.bool_(): "bool_", pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32",
              pa.int64(): "int64", pa.float32(): "float32", pa.float64(): "float64",
              pa.date32(): "date32"}
    if t in simple:
        return f"{pa_}.{simple[t]}()"
    if T.is_string(t):
        return f"{pa_}.string()"
    if T.is_decimal(t):
        return f"{pa_}.decimal128({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        tz = f", tz={t.tz!r}" if t.tz is not None else ""
        return f"{pa_}.timestamp({t.unit!r}{tz})"
    raise PlanError(f"the Spark engine cannot return table function columns of type "
                    f"{T.sql_name(t)}")
