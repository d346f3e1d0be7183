"""Named windows: ``f(..) OVER w .. WINDOW w AS (PARTITION BY .. ORDER BY .. frame)``.

``expand_named_windows`` returns the SELECT with every reference to a named window
replaced by the specification it names, so the binder sees the same tree as for the
inline spelling (and a streaming OVER aggregate keeps its ORDER BY time attribute).

A reference may add to the window it names (``OVER (w ORDER BY ts)``), and so may a
definition (``WINDOW a AS (PARTITION BY k), b AS (a ORDER BY ts)``): the named window
contributes what the referencing one leaves out; as in standard SQL it may not restate a
PARTITION BY or ORDER BY the named window already has (the frame is the referencing
one's when it gives one). An unknown name is an error at the reference. sqlglot keeps the
referenced name as the window's ``alias``.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

Error = Callable[[str, exp.Expression], Exception]


def expand_named_windows(select: exp.Select, error: Error) -> exp.Select:
    """``select`` with named window references inlined (``select`` itself when it has no
    WINDOW clause); ``error(message, node)`` builds the exception to raise."""
    definitions = select.args.get("windows") or []
    references = [w for w in select.find_all(exp.Window)
                  if w.args.get("over") and w.args.get("alias")
                  and w.find_ancestor(exp.Select) is select]
    if not definitions and not references:
        return select
    named: dict[str, exp.Window] = {}
    for definition in definitions:
        name = definition.this.name.lower()
        if name in named:
            raise error(f"window '{definition.this.name}' is defined twice", definition)
        named[name] = _inlined(definition, named, error)
    select = select.copy()
    select.set("windows", None)
    for window in list(select.find_all(exp.Window)):
        if window.args.get("over") and window.args.get("alias") \
                and window.find_ancestor(exp.Select) is select:
            window.replace(_inlined(window, named, error))
    return select


def _inlined(window: exp.Window, named: dict[str, exp.Window], error: Error) -> exp.Window:
    """``window`` without its reference, the parts of the window it names filled in."""
    reference = window.args.get("alias")
    result = window.copy()
    if not isinstance(reference, exp.Identifier):
        return result
    base = named.get(reference.name.lower())
    if base is None:
        raise error(f"unknown window '{reference.name}'", window)
    result.set("alias", None)
    for part, shown in (("partition_by", "PARTITION BY"), ("order", "ORDER BY"),
                        ("spec", "")):
        own, inherited = window.args.get(part), base.args.get(part)
        if own and inherited and shown:
            raise error(f"window '{reference.name}' already has a {shown}", window)
        if not own and inherited:
            result.set(part, [p.copy() for p in inherited] if isinstance(inherited, list)
                       else inherited.copy())
    return result
