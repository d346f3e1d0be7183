"""ANALYZE TABLE: measure a bounded filesystem table and keep the result in its catalog entry.

Names are resolved here (the statement is not a query, so the binder never sees it), with
the binder's kind of error: the message, line:col and a caret under the name. The
measuring itself reads data and lives in ``runtime.statistics``. The result table shows
what was computed, one row per analyzed column.
"""

from __future__ import annotations

import dataclasses
from difflib import get_close_matches
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from flowsql.errors import BindError
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.runtime.statistics.analyze_table import AnalyzedTable, analyze_table, is_analyzable
from flowsql.session.result import Result
from flowsql.sql.statement_parser import AnalyzeStatement
from flowsql.sql.syntax_errors import position as text_position

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["execute_analyze"]


def execute_analyze(session: Session, statement: AnalyzeStatement) -> Result:
    table = _table(session, statement)
    columns = _columns(table, statement)
    analyzed = analyze_table(table, columns, scan_data=not statement.noscan)
    session.catalog.add(dataclasses.replace(table, statistics=analyzed.statistics),
                        replace=True)
    return Result("analyze", table=_report(table, analyzed))


def _error(statement: AnalyzeStatement, message: str, at: int) -> BindError:
    return BindError(message, *text_position(statement.text, at), statement.text)


def _table(session: Session, statement: AnalyzeStatement) -> TableEntry:
    entry = session.catalog.get(statement.table)
    if entry is None:
        names = session.catalog.names()
        close = get_close_matches(statement.table.lower(), [n.lower() for n in names], n=1,
                                  cutoff=0.5)
        hint = f"; did you mean '{next(n for n in names if n.lower() == close[0])}'?" \
            if close else ""
        raise _error(statement, f"table '{statement.table}' not found{hint}",
                     statement.table_at)
    if not isinstance(entry, TableEntry):
        raise _error(statement, f"'{entry.name}' is a view; ANALYZE TABLE needs a table",
                     statement.table_at)
    if not is_analyzable(entry):
        kind = "a watched (unbounded) directory" if entry.connector.lower() == "filesystem" \
            else f"a {entry.connector} table"
        raise _error(statement, f"ANALYZE TABLE needs a bounded table whose files it can read "
                     f"(the filesystem connector); '{entry.name}' is {kind}",
                     statement.table_at)
    return entry


def _columns(table: TableEntry, statement: AnalyzeStatement) -> list[str]:
    """The physical columns to analyze, as the schema spells them, in the order given
    (each once); every column when the statement names none."""
    if statement.columns is None:
        return list(table.schema.names)
    by_lower = {name.lower(): name for name in table.schema.names}
    computed = {c.name.lower() for c in table.computed}
    chosen: list[str] = []
    for name, at in zip(statement.columns, statement.column_at):
        found = by_lower.get(name.lower())
        if found is None:
            if name.lower() in computed:
                raise _error(statement, f"column '{name}' of table '{table.name}' is computed "
                             "when read, not stored: ANALYZE TABLE measures stored columns",
                             at)
            close = get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.5)
            hint = f"; did you mean '{by_lower[close[0]]}'?" if close else ""
            raise _error(statement, f"column '{name}' not found in table '{table.name}'{hint}",
                         at)
        if found not in chosen:
            chosen.append(found)
    return chosen


def _report(table: TableEntry, analyzed: AnalyzedTable) -> pa.Table:
    """One row per analyzed column (one row with no column for NOSCAN)."""
    rows: list[dict[str, Any]] = []
    for name, profile in analyzed.profiles.items():
        figures = profile.statistics()
        rows.append({
            "column": name, "type": T.sql_name(T.normalize_storage_type(profile.dtype)),
            "row_count": analyzed.statistics.row_count, "null_count": figures.null_count,
            "distinct_count": figures.distinct_count, "min": _text(profile.minimum),
            "max": _text(profile.maximum), "avg_width": figures.avg_width,
            "histogram_buckets": max(len(figures.histogram) - 1, 0)})
    if not rows:
        rows.append({"column": None, "type": None,
                     "row_count": analyzed.statistics.row_count})
    return pa.Table.from_pylist(rows, schema=_REPORT_SCHEMA)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


_REPORT_SCHEMA = pa.schema([
    ("column", pa.string()), ("type", pa.string()), ("row_count", pa.int64()),
    ("null_count", pa.int64()), ("distinct_count", pa.int64()), ("min", pa.string()),
    ("max", pa.string()), ("avg_width", pa.float64()), ("histogram_buckets", pa.int64())])
