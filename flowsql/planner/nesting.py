"""How deeply a query's expressions may nest, and the recursion room to handle that depth.

Parsing (sqlglot), binding, folding, planning and expression compilation walk expression
trees recursively. ``1 + 1 + ... + 1`` is a tree as deep as it has terms, and every level of
parentheses costs sqlglot's recursive-descent parser about twenty Python frames, so Python's
default limit of 1000 frames ended a query of 49 nested parentheses or 329 added terms in
RecursionError. Those walks run inside :func:`deep_nesting`, which raises the interpreter's
recursion limit for their duration (never lowers it) to a bound that covers
:data:`MAX_EXPRESSION_NESTING` levels, and turns a RecursionError beyond that into the
caller's clear error. Python 3.11+ runs Python-to-Python calls without growing the C stack,
so the bound is safe for the interpreter at the main thread's and workers' stack sizes (tested
at four times the documented depth).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: the nesting depth (parentheses, operator chains, CASE, function calls) every stage supports
MAX_EXPRESSION_NESTING = 500

#: Python frames one nesting level may cost in the most frame-hungry stage (sqlglot's parser
#: uses about 20 per parenthesis)
_FRAMES_PER_LEVEL = 40

#: the recursion limit inside :func:`deep_nesting`
RECURSION_LIMIT = MAX_EXPRESSION_NESTING * _FRAMES_PER_LEVEL + 2000

_LOCK = threading.Lock()
_ACTIVE = 0
_SAVED_LIMIT = 0


@contextmanager
def deep_nesting(too_deep: Callable[[], Exception]) -> Iterator[None]:
    """Run the block with room for :data:`MAX_EXPRESSION_NESTING` levels; a RecursionError
    in it becomes ``too_deep()`` (an error saying the limit). Re-entrant and thread-safe:
    the limit is restored when the last active block ends."""
    global _ACTIVE, _SAVED_LIMIT
    with _LOCK:
        if _ACTIVE == 0:
            _SAVED_LIMIT = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_SAVED_LIMIT, RECURSION_LIMIT))
        _ACTIVE += 1
    try:
        yield
    except RecursionError:
        raise too_deep() from None
    finally:
        with _LOCK:
            _ACTIVE -= 1
            if _ACTIVE == 0:
                sys.setrecursionlimit(_SAVED_LIMIT)


def too_deep_message(stage: str) -> str:
    """The text of the error for a query nested beyond what ``stage`` can handle."""
    return (f"expression nested too deeply to {stage}: at most {MAX_EXPRESSION_NESTING} "
            "levels of parentheses, operators, CASE or function calls are supported")
