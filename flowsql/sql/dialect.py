"""The ``flowsql`` sqlglot dialect: ANSI SQL plus the Flink SQL streaming forms.

The default sqlglot grammar already reads ``CREATE TABLE ... WITH ('k' = 'v')`` as table
properties; this dialect is the single place where flowsql-specific syntax is added:

* ``WATERMARK FOR col AS expr`` inside CREATE TABLE's column list (parsed to sqlglot's
  ``WatermarkColumnConstraint``, as the RisingWave dialect does);
* Flink's ``TIMESTAMPADD(unit, n, x)`` and ``TIMESTAMPDIFF(unit, a, b)`` kept as plain calls
  whose first argument is the unit word (the default grammar reorders TIMESTAMPDIFF's
  arguments by another dialect's convention);
* backtick-quoted identifiers, as Flink writes them;
* ``col TYPE METADATA [FROM 'key'] [VIRTUAL]`` (Flink's metadata columns), parsed to
  :class:`MetadataColumnConstraint`;
* the window table functions ``TUMBLE`` / ``HOP`` / ``CUMULATE`` / ``SESSION`` with Flink's
  argument forms ``TABLE t [PARTITION BY k, ...]`` and ``DESCRIPTOR(col)``, parsed to
  :class:`WindowTVF` (the generic function-argument grammar reads neither); without
  ``TABLE`` as first argument, ``TUMBLE(ts, size)`` / ``HOP(ts, slide, size)`` /
  ``SESSION(ts, gap)`` are Flink's group windows of GROUP BY, kept as plain calls
  (``flowsql.sql.group_windows`` rewrites them to the table functions).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.generator import Generator as BaseGenerator
from sqlglot.parser import IsPredicatePrecedence
from sqlglot.parsers.base import BaseParser
from sqlglot.tokens import Tokenizer as BaseTokenizer
from sqlglot.tokens import TokenType

WINDOW_TVFS = ("TUMBLE", "HOP", "CUMULATE", "SESSION")
_GROUP_WINDOWS = ("TUMBLE", "HOP", "SESSION")


class WindowTVF(exp.Expression):
    """``KIND(TABLE table [PARTITION BY partition_by], DESCRIPTOR(descriptor), *expressions)``.

    ``this`` is the upper-case function name; ``expressions`` the remaining arguments
    (intervals) as written. Validation of counts and types belongs to the binder, which
    can point at the offending argument.
    """

    arg_types = {"this": True, "table": True, "partition_by": False, "descriptor": False,
                 "expressions": False}


class MetadataColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """``METADATA [FROM 'key'] [VIRTUAL]``: ``this`` is the key literal (None: the column's
    name is the key), ``virtual`` whether the column is read-only."""

    arg_types = {"this": False, "virtual": False}


def _parse_metadata(self: Any) -> MetadataColumnConstraint:
    key = self._parse_string() if self._match(TokenType.FROM) else None
    virtual = self._match_text_seq("VIRTUAL")
    return self.expression(MetadataColumnConstraint(this=key, virtual=bool(virtual)))


def _parse_window_tvf(self: Any, kind: str) -> WindowTVF | exp.Anonymous:
    """Called after ``KIND(`` has been consumed; the caller matches the ``)``. Without
    ``TABLE`` first, the call is a group window (``GROUP BY k, TUMBLE(ts, size)``): a
    plain call whose arguments the binder checks."""
    if not self._match(TokenType.TABLE):
        first = self._curr
        call_arguments = self._parse_csv(self._parse_disjunction)
        # a DESCRIPTOR (or CUMULATE, which has no group window) says a table function
        # was meant, and its TABLE keyword is missing
        if kind not in _GROUP_WINDOWS or any(
                isinstance(a, exp.Anonymous) and a.name.upper() == "DESCRIPTOR"
                for a in call_arguments):
            self.raise_error(f"{kind} expects TABLE <name> as its first argument", first)
        return exp.Anonymous(this=kind, expressions=call_arguments)
    table = self._parse_table_parts()
    partition_by = None
    if self._match(TokenType.PARTITION_BY):
        # Flink: one key bare, several in parentheses
        partition_by = (self._parse_wrapped_csv(self._parse_column)
                        if self._match(TokenType.L_PAREN, advance=False)
                        else [self._parse_column()])
    descriptor = None
    arguments: list[exp.Expression] = []
    while self._match(TokenType.COMMA):
        argument = self._parse_disjunction()
        if descriptor is None and isinstance(argument, exp.Anonymous) \
                and argument.name.upper() == "DESCRIPTOR":
            descriptor = argument
        else:
            arguments.append(argument)
    return self.expression(WindowTVF(this=kind, table=table, partition_by=partition_by,
                                     descriptor=descriptor, expressions=arguments))


def _window_tvf_sql(self: Any, expression: WindowTVF) -> str:
    table = f"TABLE {self.sql(expression, 'table')}"
    partition = expression.args.get("partition_by")
    if partition:
        keys = ", ".join(self.sql(p) for p in partition)
        table += f" PARTITION BY ({keys})"
    args = [table]
    if expression.args.get("descriptor") is not None:
        args.append(self.sql(expression, "descriptor"))
    args.extend(self.sql(a) for a in expression.expressions)
    return f"{expression.this}({', '.join(args)})"


class FlowSQL(Dialect):
    """Registered under the name ``flowsql`` (sqlglot registers subclasses by class name)."""

    # NULLs sort last in both directions unless NULLS FIRST is written (DuckDB's default).
    NULL_ORDERING = "nulls_are_last"

    class Tokenizer(BaseTokenizer):
        # Flink SQL quotes identifiers with backticks (`offset`, `timestamp`); the standard
        # double quotes work too
        IDENTIFIERS = ['"', "`"]
        # Flink's BYTES is VARBINARY
        KEYWORDS = {**BaseTokenizer.KEYWORDS, "BYTES": TokenType.VARBINARY}

    class Parser(BaseParser):
        # IS [NOT] TRUE / FALSE / NULL / UNKNOWN bind looser than comparisons and equality,
        # as in standard SQL and Flink (Calcite): ``qty > 2 IS TRUE`` is ``(qty > 2) IS TRUE``
        IS_PREDICATE_PRECEDENCE = IsPredicatePrecedence.LOW

        FUNC_TOKENS = {*BaseParser.FUNC_TOKENS, TokenType.SESSION}

        FUNCTIONS = {
            **BaseParser.FUNCTIONS,
            **{name: (lambda kind: lambda args: exp.Anonymous(this=kind, expressions=args))(name)
               for name in ("TIMESTAMPADD", "TIMESTAMPDIFF")},
        }

        FUNCTION_PARSERS = {
            **BaseParser.FUNCTION_PARSERS,
            **{name: (lambda kind: lambda self: _parse_window_tvf(self, kind))(name)
               for name in WINDOW_TVFS},
        }

        CONSTRAINT_PARSERS = {
            **BaseParser.CONSTRAINT_PARSERS,
            "WATERMARK": lambda self: self.expression(
                exp.WatermarkColumnConstraint(
                    this=self._match(TokenType.FOR) and self._parse_column(),
                    expression=self._match(TokenType.ALIAS) and self._parse_disjunction(),
                )
            ),
        }

        CONSTRAINT_PARSERS["METADATA"] = _parse_metadata

        SCHEMA_UNNAMED_CONSTRAINTS = {*BaseParser.SCHEMA_UNNAMED_CONSTRAINTS, "WATERMARK"}

    class Generator(BaseGenerator):
        TRANSFORMS = {**BaseGenerator.TRANSFORMS, WindowTVF: _window_tvf_sql}


DIALECT = "flowsql"
