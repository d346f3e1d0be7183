"""How many groups a GROUP BY makes: the dampened product of its keys' distinct counts.

Keys are rarely independent, and the commonest dependency is exact: every column of a table
is a function of that table's key. So before multiplying, keys that other keys determine are
left out. A key that is unique in its base table determines that table's other columns, and
through an equi-join ``a = b`` (found in the aggregate's input) where ``a`` is determined and
``b`` is unique in its table, that table's columns too. ``GROUP BY c_custkey, c_name, n_name``
over customer joined to nation on ``c_nationkey = n_nationkey`` makes as many groups as
there are customer keys.

The remaining keys' counts combine with exponential backoff (``dampening.py``), and there
are never more groups than input rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from flowsql.optimizer.cardinality.columns import ColumnEstimate
from flowsql.optimizer.cardinality.dampening import dampened_product

Links = Sequence[tuple[ColumnEstimate, ColumnEstimate]]


def group_count(keys: Sequence[ColumnEstimate], input_rows: float, links: Links) -> float:
    """Groups of a GROUP BY over ``keys`` of an input of ``input_rows`` rows whose joins
    equate the column pairs ``links``."""
    if not keys:
        return 1.0
    chosen: list[ColumnEstimate] = []
    for key in sorted(keys, key=lambda k: (not k.unique, -k.distinct)):
        if not _determined(key, chosen, links):
            chosen.append(key)
    # a key chosen early may be determined by keys chosen after it
    for key in sorted(chosen, key=lambda k: k.distinct):
        if _determined(key, [k for k in chosen if k is not key], links):
            chosen.remove(key)
    groups = dampened_product(k.distinct for k in chosen)
    return max(min(groups, input_rows), 1.0 if input_rows >= 1 else input_rows)


def _determined(key: ColumnEstimate, by: list[ColumnEstimate], links: Links) -> bool:
    """Whether the values of ``by`` determine ``key`` (see the module docstring)."""
    if key.origin is None:
        return False
    tables = {k.origin for k in by if k.unique and k.origin is not None}
    columns = {k.source for k in by if k.source is not None}
    _close(tables, columns, links)
    return key.origin in tables


def _close(tables: set[int], columns: set[tuple[int, str]], links: Links) -> None:
    """Add every table reached through a link from a determined column to a unique one."""
    changed = True
    while changed:
        changed = False
        for a, b in (*links, *((b, a) for a, b in links)):
            if a.source is None or b.source is None or not b.unique:
                continue
            if (a.source[0] in tables or a.source in columns) and b.source[0] not in tables:
                tables.add(b.source[0])
                changed = True
