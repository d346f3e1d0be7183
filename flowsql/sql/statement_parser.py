"""Statement parsing: split a script at top-level semicolons and parse each statement.

Every statement is parsed from a copy of the whole text in which everything outside the
statement is blanked (newlines kept), so line:col in errors refer to the user's text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from flowsql.errors import SqlSyntaxError
from flowsql.planner import types as T
from flowsql.planner.catalog import ComputedColumn, MetadataColumn, WatermarkSpec
from flowsql.planner.nesting import deep_nesting, too_deep_message
from flowsql.planner.schema import Field
from flowsql.sql.bind_query import bind_computed_column
from flowsql.sql.dialect import DIALECT
from flowsql.sql.literals import interval_value
from flowsql.sql.positions import node_position
from flowsql.sql.sql_types import to_arrow_type
from flowsql.sql.syntax_errors import (
    dangling_keyword_error,
    parse_error,
    unbalanced_parenthesis_error,
    unclosed_text_error,
)
from flowsql.sql.syntax_errors import position as text_position
from flowsql.sql.table_constraints import metadata_column, primary_key


@dataclass(frozen=True)
class Statement:
    """A parsed statement; ``text`` is the full script, ``start``/``end`` its span."""

    text: str
    start: int
    end: int

    @property
    def source(self) -> str:
        return self.text[self.start:self.end]


@dataclass(frozen=True)
class QueryStatement(Statement):
    ast: exp.Expression = field(default=None)  # type: ignore[assignment]


@dataclass(frozen=True)
class ExplainStatement(Statement):
    ast: exp.Expression = field(default=None)  # type: ignore[assignment]
    mode: str = "plan"  # plan | verbose | memo | pyspark | analyze
    #: False for ``EXPLAIN (COSTS OFF)``: the plan's shape without estimated rows
    estimates: bool = True


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    dtype: pa.DataType
    nullable: bool = True


@dataclass(frozen=True)
class CreateTableStatement(Statement):
    name: str = ""
    columns: tuple[ColumnSpec, ...] | None = None
    options: dict[str, str] = field(default_factory=dict)
    if_not_exists: bool = False
    replace: bool = False
    watermark: WatermarkSpec | None = None
    #: computed columns (``name AS expr``); ``columns`` holds the physical ones
    computed: tuple[ComputedColumn, ...] = ()
    #: metadata columns (also in ``columns``) and the PRIMARY KEY (see table_constraints)
    metadata: tuple[MetadataColumn, ...] = ()
    primary_key: tuple[str, ...] = ()


@dataclass(frozen=True)
class CreateViewStatement(Statement):
    name: str = ""
    query_sql: str = ""
    column_names: tuple[str, ...] = ()
    if_not_exists: bool = False
    replace: bool = False


@dataclass(frozen=True)
class DropStatement(Statement):
    kind: str = "table"  # table | view
    name: str = ""
    if_exists: bool = False


@dataclass(frozen=True)
class ShowTablesStatement(Statement):
    pass


@dataclass(frozen=True)
class ShowJobsStatement(Statement):
    """``SHOW JOBS`` (Flink SQL): the session's jobs, in submission order."""


@dataclass(frozen=True)
class StopJobStatement(Statement):
    """``STOP JOB '<id>' [WITH SAVEPOINT ['<dir>']] [WITH DRAIN]`` (Flink SQL; the savepoint
    directory is an addition, by default ``execution.checkpointing.savepoint-dir``)."""

    job_id: str = ""
    savepoint: bool = False
    directory: str | None = None
    drain: bool = False


@dataclass(frozen=True)
class DescribeStatement(Statement):
    """``DESCRIBE [TABLE] [EXTENDED] name``; EXTENDED adds the table's statistics."""

    name: str = ""
    extended: bool = False


@dataclass(frozen=True)
class AnalyzeStatement(Statement):
    """``ANALYZE TABLE t [COMPUTE STATISTICS [NOSCAN | FOR COLUMNS a, b | FOR ALL COLUMNS]]``
    (Spark's and Flink's spelling). ``columns`` None means every column; ``noscan``
    measures the row count only. ``table_at`` and ``column_at`` are the offsets of the
    names in ``text``, for errors that point at them."""

    table: str = ""
    columns: tuple[str, ...] | None = None
    noscan: bool = False
    table_at: int = 0
    column_at: tuple[int, ...] = ()


@dataclass(frozen=True)
class InsertStatement(Statement):
    """``INSERT INTO table [(columns)] query``: ``ast`` is the query."""

    table: str = ""
    columns: tuple[str, ...] | None = None
    ast: exp.Expression = field(default=None)  # type: ignore[assignment]


@dataclass(frozen=True)
class SetStatement(Statement):
    """``SET 'k' = 'v'``; key None lists all settings; ``reset`` restores the default."""

    key: str | None = None
    value: str | None = None
    reset: bool = False


def _tokens(text: str) -> list[Token]:
    try:
        return sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text)
    except TokenError:
        raise unclosed_text_error(text) from None


def script_tokens(text: str) -> list[Token]:
    """The dialect's tokens of ``text``, as :func:`split_statements` sees them: a
    ``SEMICOLON`` token ends a statement, and a ``;`` inside a string, quoted identifier or
    comment is no token. SqlSyntaxError naming the opening of a quote or comment left open.
    The shell asks this whether typed text ends a statement, so it and the parser always
    agree on where statements end."""
    return _tokens(text)


def _blank(s: str) -> str:
    """``s`` as spaces, its newlines kept (so line:col after it stay the same)."""
    return "\n".join(" " * len(line) for line in s.split("\n"))


def _mask(text: str, start: int, end: int) -> str:
    """Keep text[start:end]; blank everything else except newlines."""
    return _blank(text[:start]) + text[start:end] + _blank(text[end:])


def split_statements(text: str) -> list[tuple[int, int, list[Token]]]:
    """(start, end, tokens) of each non-empty statement, split at top-level semicolons."""
    out: list[tuple[int, int, list[Token]]] = []
    current: list[Token] = []
    for tok in _tokens(text):
        if tok.token_type == TokenType.SEMICOLON:
            if current:
                out.append((current[0].start, current[-1].end + 1, current))
            current = []
        else:
            current.append(tok)
    if current:
        out.append((current[0].start, current[-1].end + 1, current))
    return out


def parse_ast(text: str, start: int, end: int) -> exp.Expression:
    """sqlglot's tree of the one statement text[start:end]; SqlSyntaxError (line:col of
    ``text``) when it does not parse."""
    masked = _mask(text, start, end)
    tokens = _tokens(masked)
    for check in (unbalanced_parenthesis_error, dangling_keyword_error):
        error = check(tokens, text)
        if error is not None:
            raise error
    line, col = text_position(text, start)
    too_deep = lambda: SqlSyntaxError(too_deep_message("parse"), line, col, text)  # noqa: E731
    try:
        with deep_nesting(too_deep):
            # the tokens read above, not a second tokenizing: what sqlglot.parse would do
            parsed = sqlglot.Dialect.get_or_raise(DIALECT).parser().parse(list(tokens), masked)
    except ParseError as e:
        err = e.errors[0] if e.errors else {"description": str(e)}
        raise parse_error(err, text, start, end, tokens) from None
    statements = [p for p in parsed if p is not None]
    if len(statements) != 1:
        raise SqlSyntaxError("expected exactly one statement", None, None, text)
    return cast(exp.Expression, statements[0])


def statement_tokens(text: str, start: int, end: int) -> list[Token]:
    """The tokens of the statement ``text[start:end]`` (offsets in ``text``). The tokenizer
    reads a command word (SHOW, EXECUTE, EXPLAIN) as swallowing the rest of the statement
    as one token; here the rest is read as tokens too."""
    tokens = [t for t in _tokens(_mask(text, start, end)) if t.token_type != TokenType.SEMICOLON]
    if len(tokens) > 1 and tokens[0].token_type in _COMMANDS:
        return [tokens[0], *statement_tokens(text, tokens[0].end + 1, end)]
    return tokens


_COMMANDS = sqlglot.Dialect.get_or_raise(DIALECT).tokenizer_class.COMMANDS


def _code(piece: str) -> str:
    """``piece`` (one statement) with its comments blanked, newlines kept: what is left
    are the tokens, where the tokenizer found them."""
    kept: list[str] = []
    done = 0
    for start, end in _token_spans(piece):
        kept += [_blank(piece[done:start]), piece[start:end]]
        done = end
    return "".join([*kept, _blank(piece[done:])])


def _token_spans(piece: str, offset: int = 0) -> list[tuple[int, int]]:
    tokens = _tokens(piece[offset:])
    if len(tokens) > 1 and tokens[0].token_type in _COMMANDS:
        # the rest was swallowed as one token: read it again
        first = (offset + tokens[0].start, offset + tokens[0].end + 1)
        return [first, *_token_spans(piece, offset + tokens[0].end + 1)]
    return [(offset + t.start, offset + t.end + 1) for t in tokens]


def read_flink_statement(text: str, start: int, end: int, tokens: list[Token]
                         ) -> Statement | None:
    """The statement text[start:end] when the Flink statement grammar owns it
    (``flink_statements.lark``: SET, SHOW, STOP JOB, EXPLAIN's options, ...), None when it
    is sqlglot's."""
    from flowsql.sql.flink_statements import read_statement, statement_heads

    first = tokens[0] if tokens else None
    if first is None or first.token_type in (TokenType.STRING, TokenType.IDENTIFIER) or \
            first.text.upper() not in statement_heads():
        return None
    return read_statement(text, start, end, _code(text[start:end]), first.text.upper())


def parse_statement(text: str, start: int, end: int, tokens: list[Token]) -> Statement:
    """Parse one statement spanning text[start:end]."""
    flink = read_flink_statement(text, start, end, tokens)
    if flink is not None:
        return flink
    ast = parse_ast(text, start, end)
    return _from_ast(text, start, end, ast)


@dataclass(frozen=True)
class DescribeJobStatement(Statement):
    """``DESCRIBE JOB '<id>'`` (Flink SQL): one job's SHOW JOBS row and its operators."""

    job_id: str = ""


def _from_ast(text: str, start: int, end: int, ast: exp.Expression) -> Statement:
    if isinstance(ast, exp.Create):
        kind = (ast.args.get("kind") or "").upper()
        if kind == "TABLE":
            return _create_table(text, start, end, ast)
        if kind == "VIEW":
            target = ast.this
            columns: tuple[str, ...] = ()
            if isinstance(target, exp.Schema):
                columns = tuple(c.name for c in target.expressions)
                target = target.this
            query = ast.expression
            return CreateViewStatement(text, start, end, name=target.name,
                                       query_sql=query.sql(dialect=DIALECT),
                                       column_names=columns,
                                       if_not_exists=bool(ast.args.get("exists")),
                                       replace=bool(ast.args.get("replace")))
    if isinstance(ast, exp.Drop):
        kind = (ast.args.get("kind") or "").lower()
        if kind in ("table", "view"):
            target = ast.this if ast.this is not None else ast.args["tables"][0]
            return DropStatement(text, start, end, kind=kind, name=target.name,
                                 if_exists=bool(ast.args.get("exists")))
    if isinstance(ast, exp.Query | exp.Values):
        return QueryStatement(text, start, end, ast=ast)
    if isinstance(ast, exp.Insert) and isinstance(ast.expression, exp.Query | exp.Values):
        target = ast.this
        names: tuple[str, ...] | None = None
        if isinstance(target, exp.Schema):
            names = tuple(c.name for c in target.expressions)
            target = target.this
        if ast.args.get("overwrite"):
            raise _syntax_error("INSERT OVERWRITE is not supported; use INSERT INTO",
                                ast, text)
        return InsertStatement(text, start, end, table=target.name, columns=names,
                               ast=ast.expression)  # type: ignore[arg-type]
    line = text.count("\n", 0, start) + 1
    col = start - (text.rfind("\n", 0, start) + 1) + 1
    raise SqlSyntaxError(f"unsupported statement: {text[start:end].split()[0].upper()}",
                         line, col, text)


def _create_table(text: str, start: int, end: int, ast: exp.Create) -> CreateTableStatement:
    target = ast.this
    columns: tuple[ColumnSpec, ...] | None = None
    watermark: WatermarkSpec | None = None
    computed: tuple[ComputedColumn, ...] = ()
    metadata: list[MetadataColumn] = []
    keys: tuple[str, ...] = ()
    if isinstance(target, exp.Schema):
        keys = primary_key(target, text)
        specs: list[ColumnSpec] = []
        expressions: list[tuple[exp.ColumnDef, exp.Expression, int]] = []
        for col in target.expressions:
            if isinstance(col, exp.WatermarkColumnConstraint):
                if watermark is not None:
                    raise _syntax_error("a table has at most one WATERMARK", col, text)
                watermark = _watermark(col, text)
                continue
            if not isinstance(col, exp.ColumnDef):
                continue
            position = len(specs) + len(expressions)
            expression = _computed_expression(col, text)
            if expression is not None:
                expressions.append((col, expression, position))
                continue
            not_null = any(isinstance(c.args.get("kind"), exp.NotNullColumnConstraint)
                           and not c.args["kind"].args.get("allow_null")
                           for c in col.args.get("constraints") or [])
            declared = metadata_column(col)
            if declared is not None:
                metadata.append(declared)
            in_key = col.name.lower() in {k.lower() for k in keys}
            specs.append(ColumnSpec(col.name, to_arrow_type(col.args["kind"], text),
                                    not (not_null or in_key)))
        columns = tuple(specs)
        _check_unique_names(target, text)
        types: dict[str, pa.DataType] = {c.name.lower(): c.dtype for c in columns}
        if expressions:
            computed, computed_types = _computed_columns(expressions, columns, target, text)
            types.update(computed_types)
        if watermark is not None:
            _check_rowtime(watermark, types, computed, target, text)
        target = target.this
    options: dict[str, str] = {}
    props = ast.args.get("properties")
    for prop in props.expressions if props is not None else []:
        if isinstance(prop, exp.Property):
            key = prop.this.name if isinstance(prop.this, exp.Expression) else str(prop.this)
            value = prop.args.get("value")
            options[key] = value.name if isinstance(value, exp.Expression) else str(value)
    return CreateTableStatement(text, start, end, name=target.name, columns=columns,
                                options=options, if_not_exists=bool(ast.args.get("exists")),
                                replace=bool(ast.args.get("replace")), watermark=watermark,
                                computed=computed, metadata=tuple(metadata),
                                primary_key=keys)


def _computed_expression(col: exp.ColumnDef, text: str) -> exp.Expression | None:
    """The expression of a computed column ``name AS expr``, None for a physical column."""
    constraints = [c.args.get("kind") for c in col.args.get("constraints") or []]
    found = [c for c in constraints if isinstance(c, exp.ComputedColumnConstraint)]
    if not found:
        return None
    if col.args.get("kind") is not None:
        raise _syntax_error(f"computed column '{col.name}' takes its type from its "
                            f"expression: write {col.name} AS <expression> without a type",
                            col, text)
    others = [c for c in constraints
              if not isinstance(c, exp.ComputedColumnConstraint | exp.CommentColumnConstraint)]
    if len(found) > 1 or others or found[0].args.get("persisted"):
        raise _syntax_error(f"computed column '{col.name}': expected {col.name} AS "
                            "<expression> [COMMENT '...'] with no other constraint", col, text)
    return cast(exp.Expression, found[0].this)


def _computed_columns(expressions: list[tuple[exp.ColumnDef, exp.Expression, int]],
                      columns: tuple[ColumnSpec, ...], table: exp.Schema, text: str
                      ) -> tuple[tuple[ComputedColumn, ...], dict[str, pa.DataType]]:
    """Bind every computed column against the physical columns now, so a bad expression
    fails the DDL (naming the unknown column or the type error at its position) rather
    than the first query; returns the catalog records and each column's type."""
    if not columns:
        raise _syntax_error("a table with computed columns must declare its physical "
                            "columns (name TYPE) too", table, text)
    physical = tuple(Field.fresh(c.name, T.normalize_storage_type(c.dtype), c.nullable)
                     for c in columns)
    records: list[ComputedColumn] = []
    types: dict[str, pa.DataType] = {}
    for col, expression, position in expressions:
        bound = bind_computed_column(col.name, expression, physical, text)
        records.append(ComputedColumn(col.name, expression.sql(dialect=DIALECT), position))
        types[col.name.lower()] = bound.dtype
    return tuple(records), types


def _check_unique_names(table: exp.Schema, text: str) -> None:
    seen: set[str] = set()
    for col in table.expressions:
        if isinstance(col, exp.ColumnDef):
            if col.name.lower() in seen:
                raise _syntax_error(f"column '{col.name}' is declared twice", col, text)
            seen.add(col.name.lower())


def _syntax_error(message: str, node: exp.Expression, text: str) -> SqlSyntaxError:
    line, col = node_position(node)
    return SqlSyntaxError(message, line, col, text)


def _watermark(node: exp.WatermarkColumnConstraint, text: str) -> WatermarkSpec:
    """``WATERMARK FOR ts AS ts [- INTERVAL 'n' unit]``: bounded out-of-orderness, the only
    watermark strategy supported (Flink's common one)."""
    column, strategy = node.this, node.expression
    if not isinstance(column, exp.Column) or strategy is None:
        raise _syntax_error("expected WATERMARK FOR <column> AS <column> - INTERVAL ...",
                            node, text)
    delay = 0
    if isinstance(strategy, exp.Sub) and isinstance(strategy.expression, exp.Interval):
        interval = strategy.expression
        unit = interval.args.get("unit")
        try:
            months, days, nanos = interval_value(str(interval.this.name),
                                                 unit.name if unit is not None else None)
        except (ValueError, ArithmeticError) as e:
            raise _syntax_error(f"invalid interval '{interval.sql()}': {e}", strategy,
                                text) from None
        if months or nanos % 1_000_000 or days * 86_400_000 + nanos < 0:
            raise _syntax_error("the watermark delay must be a non-negative day-time "
                                "interval of whole milliseconds", strategy, text)
        delay = days * 86_400_000 + nanos // 1_000_000
        strategy = strategy.this
    if not (isinstance(strategy, exp.Column) and strategy.name.lower() == column.name.lower()):
        raise _syntax_error(f"unsupported watermark strategy '{node.expression.sql()}': "
                            f"expected {column.name} or {column.name} - INTERVAL '...' unit",
                            node.expression, text)
    return WatermarkSpec(column.name, delay)


def _check_rowtime(watermark: WatermarkSpec, types: dict[str, pa.DataType],
                   computed: tuple[ComputedColumn, ...], table: exp.Expression,
                   text: str) -> None:
    """The WATERMARK column (physical or computed) must exist and be a TIMESTAMP, and it
    cannot be a PROCTIME() column: a column is a rowtime or a proctime attribute, not both."""
    name = watermark.column.lower()
    if name not in types:
        raise _syntax_error(f"WATERMARK FOR '{watermark.column}': no such column", table, text)
    if any(c.name.lower() == name and c.is_proctime for c in computed):
        raise _syntax_error(f"WATERMARK FOR '{watermark.column}': a PROCTIME() column is a "
                            "processing-time attribute and cannot be the rowtime column",
                            table, text)
    dtype = types[name]
    if not pa.types.is_timestamp(dtype):
        raise _syntax_error(f"WATERMARK FOR '{watermark.column}': the rowtime column must be "
                            f"a TIMESTAMP, not {dtype}", table, text)


@dataclass(frozen=True)
class StatementSetStatement(Statement):
    """``EXECUTE STATEMENT SET BEGIN INSERT ...; INSERT ...; END`` or ``BEGIN STATEMENT
    SET; INSERT ...; END`` (Flink SQL): the INSERTs run as one job."""

    inserts: tuple[InsertStatement, ...] = ()


@dataclass(frozen=True)
class StatementSetOpening(Statement):
    """``BEGIN STATEMENT SET`` or ``EXECUTE STATEMENT SET BEGIN [first statement]``: only
    while a script is grouped into statements (``statement_set.py``), never run alone.
    ``first_at`` is the offset of the first statement of the set when it shares the
    opening's piece (the EXECUTE form), else None."""

    first_at: int | None = None


@dataclass(frozen=True)
class StatementSetEnd(Statement):
    """The ``END`` of a statement set (see :class:`StatementSetOpening`)."""


def parse_statements(text: str) -> list[Statement]:
    """Every statement of a ``;``-separated script; the statements of a statement set
    (from its BEGIN to its END) make one :class:`StatementSetStatement`."""
    from flowsql.sql.statement_set import group_statement_sets

    return group_statement_sets(text, split_statements(text), parse_statement)


def parse_one(text: str) -> Statement:
    """Exactly one statement (a trailing ``;`` is fine)."""
    parts = split_statements(text)
    if not parts:
        raise SqlSyntaxError("empty statement", None, None, text)
    if len(parts) > 1:
        tok = parts[1][2][0]
        raise SqlSyntaxError("only one statement expected here; use run_script for several",
                             tok.line, tok.col - len(tok.text) + 1, text)
    s, e, toks = parts[0]
    statement = parse_statement(text, s, e, toks)
    if isinstance(statement, StatementSetOpening | StatementSetEnd):
        raise SqlSyntaxError("a statement set spans several statements (BEGIN STATEMENT SET; "
                             "INSERT INTO ...; END): run it as a script",
                             *text_position(text, s), text)
    return statement
