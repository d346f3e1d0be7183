"""Turning sqlglot nodes and errors into line:col positions in the user's text."""

from __future__ import annotations

from sqlglot import exp


def node_position(node: exp.Expression | None) -> tuple[int | None, int | None]:
    """1-based (line, col) of the first character of ``node``, if the parser recorded it.

    sqlglot records positions on identifiers (and the end column of a token); we take the
    left-most identifier under the node and convert the end column to a start column.
    """
    if node is None:
        return None, None
    best: tuple[int, int] | None = None
    for ident in node.find_all(exp.Identifier):
        meta = ident.meta
        if "line" in meta and "col" in meta:
            start_col = meta["col"] - (meta.get("end", 0) - meta.get("start", 0))
            pos = (meta["line"], start_col)
            if best is None or pos < best:
                best = pos
    if best is None and node.meta.get("line") is not None:
        return node.meta["line"], node.meta.get("col")
    return best if best is not None else (None, None)
