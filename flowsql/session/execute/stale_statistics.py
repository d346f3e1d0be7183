"""Stale statistics are dropped when a query binds the table they describe.

Before a query is bound, every table it names (directly or through views) has its
statistics checked against its files (``runtime.statistics.freshness``: a directory
listing, no reads); statistics of files that changed since they were computed are replaced
in the catalog by what the files' footers say now, so ANALYZE figures are never used for
data they were not computed from.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from sqlglot import exp

from flowsql.planner.catalog import TableEntry, ViewEntry
from flowsql.runtime.statistics.freshness import refreshed_statistics

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["refresh_stale_statistics"]


def refresh_stale_statistics(session: Session, ast: exp.Expression) -> None:
    """Replace the stale statistics of the tables ``ast`` reads (see the module doc)."""
    from flowsql.session.execute.planning import parse_view

    pending = [ast]
    seen: set[str] = set()
    while pending:
        for node in pending.pop().find_all(exp.Table):
            name = node.name.lower()
            if not name or name in seen:
                continue
            seen.add(name)
            entry = session.catalog.get(name)
            if isinstance(entry, ViewEntry):
                pending.append(parse_view(entry.sql))
            elif isinstance(entry, TableEntry):
                refresh_table_statistics(session, entry)


def refresh_table_statistics(session: Session, entry: TableEntry) -> TableEntry:
    """``entry`` with fresh statistics (stored in the catalog when they changed)."""
    refreshed = refreshed_statistics(entry)
    if refreshed is None:
        return entry
    updated = dataclasses.replace(entry, statistics=refreshed)
    session.catalog.add(updated, replace=True)
    return updated
