"""The parts of a CREATE TABLE column list that are not columns' types: metadata columns and
the primary key (Flink SQL's forms).

* ``name TYPE METADATA [FROM 'key'] [VIRTUAL]``: the connector fills the column from the
  record's metadata (key defaults to the column name); VIRTUAL makes it read-only.
* ``PRIMARY KEY (a, b) NOT ENFORCED`` (or ``a INT PRIMARY KEY NOT ENFORCED``): flowsql, like
  Flink, does not check uniqueness; the key tells upsert connectors what a row's identity is.
  Without NOT ENFORCED the statement fails, as in Flink.
"""

from __future__ import annotations

from sqlglot import exp

from flowsql.errors import SqlSyntaxError
from flowsql.planner.catalog import MetadataColumn
from flowsql.sql.dialect import MetadataColumnConstraint
from flowsql.sql.positions import node_position


def metadata_column(col: exp.ColumnDef) -> MetadataColumn | None:
    """The metadata declaration of column ``col``, None for a physical column."""
    for constraint in col.args.get("constraints") or []:
        kind = constraint.args.get("kind")
        if isinstance(kind, MetadataColumnConstraint):
            key = kind.this.name if kind.this is not None else col.name
            return MetadataColumn(col.name, key, bool(kind.args.get("virtual")))
    return None


def primary_key(table: exp.Schema, text: str) -> tuple[str, ...]:
    """The PRIMARY KEY columns of a CREATE TABLE column list (() when none); a key that is
    declared twice, names no column or lacks NOT ENFORCED is a SqlSyntaxError at its
    position."""
    found: list[tuple[exp.Expression, tuple[str, ...]]] = []
    names = {c.name.lower(): c.name for c in table.expressions if isinstance(c, exp.ColumnDef)}
    for item in table.expressions:
        if isinstance(item, exp.PrimaryKey):
            found.append((item, tuple(e.name for e in item.expressions)))
        elif isinstance(item, exp.ColumnDef):
            for constraint in item.args.get("constraints") or []:
                if isinstance(constraint.args.get("kind"), exp.PrimaryKeyColumnConstraint):
                    found.append((constraint.args["kind"], (item.name,)))
    if not found:
        return ()
    if len(found) > 1:
        raise _error("a table has at most one PRIMARY KEY", found[1][0], text)
    node, columns = found[0]
    options = " ".join(str(o).upper() for o in node.args.get("options") or [])
    if "NOT ENFORCED" not in options:
        raise _error("PRIMARY KEY must be declared NOT ENFORCED (flowsql, like Flink, does "
                     "not check uniqueness)", node, text)
    missing = [c for c in columns if c.lower() not in names]
    if missing:
        raise _error(f"PRIMARY KEY column '{missing[0]}' is not a column of the table", node,
                     text)
    return tuple(names[c.lower()] for c in columns)


def _error(message: str, node: exp.Expression, text: str) -> SqlSyntaxError:
    line, col = node_position(node)
    return SqlSyntaxError(message, line, col, text)
