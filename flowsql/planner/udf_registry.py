"""The functions namespace of a catalog: registered user-defined functions by name.

Names are case-insensitive (as table names are). The registry holds only
:class:`~flowsql.planner.udf.UserFunction` descriptions -- data naming an import path --
never the Python objects, so a catalog stays plain data and a plan that calls a function
can be sent to a worker process as it is.
"""

from __future__ import annotations

from flowsql.errors import CatalogError
from flowsql.planner.udf import UserFunction

__all__ = ["FunctionRegistry"]


class FunctionRegistry:
    """User-defined functions (scalar, aggregate and table) of one session."""

    def __init__(self) -> None:
        self._functions: dict[str, UserFunction] = {}

    def get(self, name: str) -> UserFunction | None:
        """The function registered as ``name`` (any case), or None."""
        return self._functions.get(name.lower())

    def get_kind(self, name: str, kind: str) -> UserFunction | None:
        """The function registered as ``name`` when it is of ``kind`` (scalar, aggregate,
        table); None when there is none or it is of another kind."""
        function = self.get(name)
        return function if function is not None and function.kind == kind else None

    def functions(self) -> list[UserFunction]:
        """Every registered function, ordered by name."""
        return sorted(self._functions.values(), key=lambda f: f.name.lower())

    def add(self, function: UserFunction, replace: bool = False,
            if_not_exists: bool = False) -> bool:
        """Register ``function``; a name already taken is an error unless ``replace``
        (the new one wins) or ``if_not_exists`` (the old one stays). True when added."""
        key = function.name.lower()
        if key in self._functions and not replace:
            if if_not_exists:
                return False
            raise CatalogError(f"function '{function.name}' already exists")
        self._functions[key] = function
        return True

    def drop(self, name: str, if_exists: bool = False) -> bool:
        """Unregister ``name``; an unknown name is an error unless ``if_exists``. True when
        a function was dropped."""
        if self._functions.pop(name.lower(), None) is None:
            if if_exists:
                return False
            raise CatalogError(f"function '{name}' does not exist")
        return True
