"""Physical plan -> PySpark program: one compile function per node type.

``COMPILERS`` maps each physical node class to a function that emits the statements
computing that node into the :class:`Program` and returns the DataFrame variable holding
its result. A node class missing from the registry is a PlanError naming it.

``generate_pyspark_source`` returns the program text; ``compile_plan`` executes that very
text (see ``codegen`` for why) and calls its ``build(spark)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.dataset as ds

from flowsql.errors import DataError, PlanError
from flowsql.planner.config.connectors import connector_of
from flowsql.planner.expressions import conjoin
from flowsql.planner.physical import (
    FilterExec,
    HashAggregateExec,
    HashJoinExec,
    LimitExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    ProjectExec,
    ReuseSubplanExec,
    SetOpExec,
    SharedSubplanExec,
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
    TableFunctionExec,
    TableScanExec,
    TopNExec,
    ValuesExec,
    WindowExec,
)
from flowsql.spark.codegen import DEFAULT_BROADCAST_ROWS, Program, call
from flowsql.spark.expressions import Renderer
from flowsql.spark.joins import (
    compile_hash_join,
    compile_nested_loop_join,
    compile_sort_merge_join,
)
from flowsql.spark.literals import cast
from flowsql.spark.shared_subplans import (
    compile_reuse_subplan,
    compile_shared_subplan,
    register_shared_subplans,
)
from flowsql.spark.spark_types import ddl_schema, quote_name, spark_type
from flowsql.spark.table_functions import compile_table_function

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

NodeCompiler = Callable[[Program, Any], str]


def generate_pyspark_source(plan: PhysicalPlan, *,
                            broadcast_rows: int = DEFAULT_BROADCAST_ROWS) -> str:
    """A standalone Python program whose ``build(spark)`` returns the plan's result."""
    program = Program(_compile_node, broadcast_rows)
    register_shared_subplans(program, plan)
    result = program.compile(plan)
    return program.source(result, [f.name for f in plan.schema])


def compile_plan(plan: PhysicalPlan, spark: SparkSession, *,
                 broadcast_rows: int = DEFAULT_BROADCAST_ROWS) -> DataFrame:
    """The plan as a (lazy) Spark DataFrame with the plan's output column names."""
    return build_dataframe(generate_pyspark_source(plan, broadcast_rows=broadcast_rows),
                           spark)


def build_dataframe(source: str, spark: SparkSession) -> DataFrame:
    """Execute a program from :func:`generate_pyspark_source`: its ``build(spark)``."""
    namespace: dict[str, Any] = {"__name__": "flowsql_pyspark_program"}
    exec(compile(source, "<flowsql pyspark program>", "exec"), namespace)
    return namespace["build"](spark)


def _compile_node(program: Program, plan: PhysicalPlan) -> str:
    fn = COMPILERS.get(type(plan))
    if fn is None:
        raise PlanError(f"the Spark engine cannot run {type(plan).__name__} nodes")
    return fn(program, plan)


def _aliased(text: str, name: str) -> str:
    return text if text == f"F.col({name!r})" else f"{text}.alias({name!r})"


def _table_scan(program: Program, node: TableScanExec) -> str:
    table = node.table
    connector = connector_of(table.options)
    if not connector.formats or table.path is None:
        raise PlanError(f"TableScanExec: the Spark engine reads only filesystem tables with a "
                        f"'path' option (table '{table.name}')")
    path, fmt, options = table.path, table.format, table.options
    if fmt == "parquet":
        _check_parquet_columns(path, [f.name for f in table.schema])
        reader = f"spark.read.parquet({path!r})"
    elif fmt == "csv":
        header = connector.value(options, "csv.ignore-first-line")
        sep = connector.value(options, "csv.field-delimiter")
        reader = (f"spark.read.schema({ddl_schema(table.schema)!r})"
                  f".csv({path!r}, sep={sep!r}, header={header})")
    elif fmt == "json":
        reader = f"spark.read.schema({ddl_schema(table.schema)!r}).json({path!r})"
    else:
        raise PlanError(f"TableScanExec: the Spark engine cannot read format '{fmt}' "
                        f"(table '{table.name}')")
    stored = {f.name.lower(): f for f in table.schema}
    items = []
    for field, name in zip(node.fields, program.names(node.fields)):
        source = stored.get(field.name.lower())
        if source is None:
            raise PlanError(f"TableScanExec: table '{table.name}' has no column '{field.name}'")
        text = f"F.col({quote_name(source.name)!r})"
        if spark_type(source.type) != spark_type(field.dtype):
            text = cast(text, field.dtype)
        items.append(f"{text}.alias({name!r})")
    text = call(f"{reader}.select", items)
    predicate = conjoin(list(node.filters))
    if predicate is not None:
        text = call(f"{text}.where", [Renderer(program.column).render(predicate)])
    return program.assign(text)


def _check_parquet_columns(path: str, declared: list[str]) -> None:
    """Spark reads a declared column a Parquet file lacks as NULLs; the local engine rejects
    it (``runtime.connectors.filesystem``), so the same check runs here, on the footers,
    before a program is built: both engines fail alike with a DataError naming the file
    and the column. Files are listed as Spark lists them (names starting with '.' or '_'
    skipped); a path that cannot be listed is left for Spark to report."""
    try:
        files = ds.dataset(path, format="parquet").files
    except (pa.ArrowException, OSError):
        return
    for file in sorted(files):
        try:
            stored = set(ds.dataset(file, format="parquet").schema.names)
        except (pa.ArrowException, OSError) as e:
            raise DataError(f"cannot read the Parquet schema of '{file}': {e}") from None
        for name in declared:
            if name not in stored:
                raise DataError(f"Parquet file '{file}' has no column '{name}' (declared by "
                                "the table)")


def _values(program: Program, node: ValuesExec) -> str:
    names = program.names(node.fields)
    if not names:
        return program.assign(f"spark.range({len(node.rows)}).select()")
    r = Renderer(program.column)
    if not node.rows:
        nulls = [f"{cast('F.lit(None)', f.dtype)}.alias({n!r})"
                 for f, n in zip(node.fields, names)]
        return program.assign(call("spark.range(0).select", nulls))
    rows = [call("F.struct", [f"{cast(r.render(e), f.dtype)}.alias({n!r})"
                              for e, f, n in zip(row, node.fields, names)])
            for row in node.rows]
    return program.assign(f"spark.range(1).select(F.inline({call('F.array', rows)}))")


def _filter(program: Program, node: FilterExec) -> str:
    child = program.compile(node.input)
    return program.assign(call(f"{child}.where", [Renderer(program.column).render(node.predicate)]))


def _project(program: Program, node: ProjectExec) -> str:
    child = program.compile(node.input)
    r = Renderer(program.column)
    items = [_aliased(cast(r.render(e), f.dtype) if e.dtype != f.dtype else r.render(e), n)
             for e, f, n in zip(node.exprs, node.fields, program.names(node.fields))]
    return program.assign(call(f"{child}.select", items))


def _aggregate(program: Program, node: HashAggregateExec | SortAggregateExec) -> str:
    """A groupBy for either aggregate algorithm: Spark picks its own."""
    child = program.compile(node.input)
    r = Renderer(program.column)
    user = [a.name for a in node.aggs if a.function is not None]
    if user and len(user) < len(node.aggs):  # Spark runs pandas/Arrow aggregates apart
        raise PlanError(f"HashAggregateExec: the Spark engine cannot compute the user-defined "
                        f"aggregate {', '.join(user)} together with built-in aggregates in "
                        "one GROUP BY; compute them in two queries and join")
    groups = [_aliased(r.render(e), n)
              for e, n in zip(node.group_exprs, program.names(node.group_fields))]
    aggs = [f"{r.render(a)}.alias({n!r})"
            for a, n in zip(node.aggs, program.names(node.agg_fields))]
    if not aggs:
        return program.assign(f"{call(f'{child}.select', groups)}.distinct()")
    if not groups:
        return program.assign(call(f"{child}.agg", aggs))
    return program.assign(call(f"{call(f'{child}.groupBy', groups)}.agg", aggs))


def _window(program: Program, node: WindowExec) -> str:
    child = program.compile(node.input)
    r = Renderer(program.column)
    items = ["'*'", *(f"{r.render(c)}.alias({n!r})"
                      for c, n in zip(node.calls, program.names(node.fields)))]
    return program.assign(call(f"{child}.select", items))


def _sort(program: Program, node: SortExec) -> str:
    child = program.compile(node.input)
    r = Renderer(program.column)
    return program.assign(call(f"{child}.orderBy", [r.sort_key(k) for k in node.keys]))


def _top_n(program: Program, node: TopNExec) -> str:
    child = program.compile(node.input)
    r = Renderer(program.column)
    text = call(f"{child}.orderBy", [r.sort_key(k) for k in node.keys])
    if node.offset:
        text += f".offset({node.offset})"
    return program.assign(f"{text}.limit({node.limit})")


def _limit(program: Program, node: LimitExec) -> str:
    text = program.compile(node.input)
    if node.offset:
        text += f".offset({node.offset})"
    if node.limit is not None:
        text += f".limit({node.limit})"
    return program.assign(text)


_SET_OPS = {("union", True): "{l}.unionAll({r})", ("union", False): "{l}.union({r}).distinct()",
            ("intersect", True): "{l}.intersectAll({r})",
            ("intersect", False): "{l}.intersect({r})",
            ("except", True): "{l}.exceptAll({r})", ("except", False): "{l}.subtract({r})"}


def _set_op(program: Program, node: SetOpExec) -> str:
    template = _SET_OPS.get((node.kind, node.all))
    if template is None:
        raise PlanError(f"SetOpExec: unknown kind {node.kind}")
    left, right = program.compile(node.left), program.compile(node.right)
    # Inputs line up by position; both take the output's names so the result has them.
    names = ", ".join(repr(n) for n in program.names(node.fields))
    return program.assign(template.format(l=f"{left}.toDF({names})", r=f"{right}.toDF({names})"))


COMPILERS: dict[type[PhysicalPlan], NodeCompiler] = {
    TableScanExec: _table_scan,
    ValuesExec: _values,
    FilterExec: _filter,
    ProjectExec: _project,
    HashJoinExec: compile_hash_join,
    NestedLoopJoinExec: compile_nested_loop_join,
    HashAggregateExec: _aggregate,
    SortMergeJoinExec: compile_sort_merge_join,
    SortAggregateExec: _aggregate,
    WindowExec: _window,
    SortExec: _sort,
    TopNExec: _top_n,
    LimitExec: _limit,
    SetOpExec: _set_op,
    TableFunctionExec: compile_table_function,
    SharedSubplanExec: compile_shared_subplan,
    ReuseSubplanExec: compile_reuse_subplan,
}
