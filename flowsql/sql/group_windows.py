"""Flink's group windows: ``GROUP BY k, TUMBLE(ts, size)`` (also ``HOP(ts, slide, size)``
and ``SESSION(ts, gap)``) with ``TUMBLE_START(ts, size)`` / ``_END`` / ``_ROWTIME`` /
``_PROCTIME`` in the select list, HAVING or ORDER BY.

``rewrite_group_window`` turns such a SELECT into the window table function form the
binder already knows, so both spellings share one plan and one runtime::

    SELECT k, TUMBLE_START(ts, size), count(*) FROM t [AS a] [WHERE ..]
    GROUP BY k, TUMBLE(ts, size)
    -->
    SELECT k, a.window_start, count(*)
    FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size)) AS a [WHERE ..]
    GROUP BY k, a.window_start, a.window_end

``_START`` / ``_END`` are window_start / window_end; ``_ROWTIME`` and ``_PROCTIME`` are
``window_end - 1 ms`` (the TVF's window_time), the time of the window's result rows.
``_ROWTIME`` reads window_time itself, added to the group keys: as in Flink it is then a
rowtime attribute of the result, so an outer group window over it cascades in streaming. A
SESSION window's other group keys become its PARTITION BY (sessions are per key, as in
Flink), so they must be plain columns. The input must be one table, view, CTE or
subquery (no join: the window's time column must belong to one relation); the WHERE
clause stays where it is, which the window aggregate applies before assigning windows.

Errors carry line:col: an auxiliary function without the group window, one whose kind or
arguments differ from the GROUP BY window, a group window outside GROUP BY, several group
windows, or a wrong number of arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sqlglot import exp

from flowsql.sql.dialect import WindowTVF

Error = Callable[[str, exp.Expression | None], Exception]

#: kind -> the interval arguments after the time column
GROUP_WINDOWS: dict[str, tuple[str, ...]] = {
    "TUMBLE": ("size",),
    "HOP": ("slide", "size"),
    "SESSION": ("gap",),
}

#: auxiliary function suffix -> the window TVF column it reads
AUXILIARIES: dict[str, str] = {
    "START": "window_start",
    "END": "window_end",
    "ROWTIME": "window_time",
    "PROCTIME": "window_time",
}


def rewrite_group_window(select: exp.Select, error: Error) -> exp.Select:
    """``select`` in the window table function form if its GROUP BY holds a group window
    (``select`` itself otherwise); ``error(message, node)`` builds the exception."""
    group = select.args.get("group")
    keys = list(group.expressions) if group is not None else []
    windows = [k for k in keys if _window_kind(k) is not None]
    auxiliaries = [n for n in _own_nodes(select) if _auxiliary(n) is not None]
    stray = [n for n in _own_nodes(select) if _window_kind(n) is not None
             and not any(n is w for w in windows)]
    if stray:
        name = _name(stray[0])
        raise error(f"{name}(...) is a group window: it belongs directly in GROUP BY "
                    f"(GROUP BY k, {name}(time_column, ...))", _anchor(stray[0]))
    if not windows:
        if auxiliaries:
            call = auxiliaries[0]
            kind = _auxiliary(call)[0]  # type: ignore[index]
            raise error(f"{_name(call)}(...) needs the group window {kind}(...) in GROUP BY",
                        _anchor(call))
        return select
    if len(windows) > 1:
        raise error("GROUP BY may hold only one group window", _anchor(windows[1]))
    window = windows[0]
    kind = _name(window)
    _check_arguments(window, kind, error)
    for call in auxiliaries:
        _check_auxiliary(call, window, kind, error)

    from_ = select.args.get("from_") or select.args.get("from")
    if from_ is None:
        raise error(f"{kind} group window needs a FROM clause", _anchor(window))
    if select.args.get("joins"):
        raise error(f"{kind} group window over a join is not supported: window a subquery "
                    "that holds the join", _anchor(window))
    item = from_.this
    if not isinstance(item, exp.Table | exp.Subquery) or isinstance(item.this, exp.Func) \
            or (isinstance(item, exp.Table) and isinstance(item.this, exp.Anonymous)):
        raise error(f"{kind} group window needs a table, view or subquery in FROM",
                    _anchor(window))
    qualifier = item.alias or (item.name if isinstance(item, exp.Table) else "")
    if not qualifier:
        raise error(f"{kind} group window over a subquery needs an alias for it", item)

    others = [k for k in keys if k is not window]
    partition: list[exp.Expression] | None = None
    if kind == "SESSION" and others:
        not_column = next((k for k in others if not isinstance(k, exp.Column)), None)
        if not_column is not None:
            raise error("SESSION group window: the other GROUP BY keys must be columns "
                        "(sessions are per key)", _anchor(not_column))
        partition = [exp.column(k.this.copy()) for k in others]

    inner = item.copy()
    inner.set("alias", None)
    time = window.expressions[0]
    tvf = _window_tvf(kind, inner, partition, time, window.expressions[1:])

    rewritten = select.copy()
    new_item = exp.Table(this=exp.Anonymous(this="TABLE", expressions=[tvf]),
                         alias=exp.TableAlias(this=exp.to_identifier(qualifier)))
    new_from = rewritten.args.get("from_") or rewritten.args["from"]
    new_from.set("this", new_item)
    new_group = rewritten.args["group"]
    new_keys: list[exp.Expression] = []
    for key in new_group.expressions:
        if _window_kind(key) is not None:
            new_keys += [_window_column("window_start", qualifier, key),
                         _window_column("window_end", qualifier, key)]
        else:
            new_keys.append(key)
    if any(_auxiliary(n) == (kind, "ROWTIME") for n in auxiliaries):
        # grouped, window_time is the window's rowtime attribute in the aggregate's result
        new_keys.append(_window_column("window_time", qualifier, window))
    new_group.set("expressions", new_keys)
    for call in [n for n in _own_nodes(rewritten) if _auxiliary(n) is not None]:
        call.replace(_window_value(_auxiliary(call)[1], qualifier, call))  # type: ignore[index]
    return rewritten


def _window_value(suffix: str, qualifier: str, at: exp.Expression) -> exp.Expression:
    """What an auxiliary function (``TUMBLE_<suffix>``) reads. ``_ROWTIME`` reads
    window_time, which the rewrite adds to the group keys, so that it stays a rowtime
    attribute of the result (Flink: a window aggregate or a window TVF over it cascades);
    ``_PROCTIME`` computes the same value from window_end, as the TVF defines it."""
    column = AUXILIARIES[suffix]
    if suffix != "PROCTIME":
        return _window_column(column, qualifier, at)
    one_ms = exp.Interval(this=exp.Literal.string("0.001"), unit=exp.Var(this="SECOND"))
    return exp.Paren(this=exp.Sub(this=_window_column("window_end", qualifier, at),
                                  expression=one_ms))


def _window_tvf(kind: str, table: exp.Expression, partition: list[exp.Expression] | None,
                time: exp.Expression, intervals: list[exp.Expression]) -> exp.Expression:
    descriptor = exp.Anonymous(this="DESCRIPTOR", expressions=[exp.column(time.this.copy())])
    return WindowTVF(this=kind, table=table, partition_by=partition, descriptor=descriptor,
                     expressions=[i.copy() for i in intervals])


def _window_column(name: str, qualifier: str, at: exp.Expression) -> exp.Column:
    """``qualifier.name``, positioned where ``at`` was written (for later errors)."""
    column = exp.Column(this=exp.to_identifier(name), table=exp.to_identifier(qualifier))
    anchor = _anchor(at)
    first = next(anchor.find_all(exp.Identifier), None)
    if first is not None:
        column.this.meta.update(first.meta)
    return column


def _check_arguments(window: exp.Expression, kind: str, error: Error) -> None:
    intervals = GROUP_WINDOWS[kind]
    args = window.expressions
    if len(args) != 1 + len(intervals):
        raise error(f"{kind} group window expects (time_column, {', '.join(intervals)}); got "
                    f"{len(args)} argument(s)", _anchor(window))
    if not isinstance(args[0], exp.Column):
        raise error(f"{kind} group window: the first argument must be the time column",
                    _anchor(args[0]))


def _check_auxiliary(call: exp.Expression, window: exp.Expression, kind: str,
                     error: Error) -> None:
    own_kind, _ = _auxiliary(call)  # type: ignore[misc]
    expected = f"{kind}({', '.join(_text(a) for a in window.expressions)})"
    if own_kind != kind:
        raise error(f"{_name(call)}(...) does not match the group window {expected} of "
                    "GROUP BY", _anchor(call))
    if [_text(a) for a in call.expressions] != [_text(a) for a in window.expressions]:
        raise error(f"{_name(call)}({', '.join(_text(a) for a in call.expressions)}) does "
                    f"not match the group window {expected} of GROUP BY: the arguments "
                    "must be the same", _anchor(call))


def _text(node: exp.Expression) -> str:
    """An argument as compared: a column by its name alone (``B.ts`` and ``ts`` are the
    same column of the single windowed input), anything else by its SQL text."""
    if isinstance(node, exp.Column):
        return node.name.lower()
    return node.sql().upper()


def _name(node: exp.Expression) -> str:
    return str(node.this).upper()


def _window_kind(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Anonymous) and _name(node) in GROUP_WINDOWS:
        return _name(node)
    return None


def _auxiliary(node: exp.Expression) -> tuple[str, str] | None:
    """(window kind, suffix) of ``TUMBLE_START`` and its siblings."""
    if not isinstance(node, exp.Anonymous):
        return None
    kind, _, suffix = _name(node).partition("_")
    if kind in GROUP_WINDOWS and suffix in AUXILIARIES:
        return kind, suffix
    return None


def _own_nodes(select: exp.Select) -> Iterator[exp.Expression]:
    """The nodes of ``select``'s own clauses, not those of nested queries (a subquery in
    FROM or in an expression has its own GROUP BY)."""
    for key, value in select.args.items():
        if key in ("from", "from_", "joins", "with", "with_"):
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, exp.Expression):
                yield from _walk(child)


def _walk(node: exp.Expression) -> Iterator[exp.Expression]:
    yield node
    for child in node.iter_expressions():
        if isinstance(child, exp.Query | exp.Subquery):
            continue
        yield from _walk(child)


def _anchor(node: exp.Expression) -> exp.Expression:
    """Where to point an error about a call: positions are recorded on identifiers (the
    call node itself has none), so its first argument that holds one stands in for it."""
    if node.meta.get("line"):
        return node
    for argument in node.expressions if isinstance(node, exp.Anonymous) else []:
        if next(argument.find_all(exp.Identifier), None) is not None:
            return argument
    return next(node.find_all(exp.Identifier), node)
