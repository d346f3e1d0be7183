"""Reading one format's options from a table's WITH options.

Flink spells a format option ``<format>.<option>`` for the table's ``format``, and
``key.<format>.<option>`` / ``value.<format>.<option>`` for ``key.format`` and
``value.format``; :class:`FormatOptions` hides that prefix. Values arrive as the strings
the user wrote and are parsed by the planner's value kinds (as every declared option is);
a value that does not fit is a :class:`CatalogError` naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowsql.errors import CatalogError, ConfigError
from flowsql.planner.config.values import BOOLEAN, CHARACTER, ValueKind


class FormatOptions:
    def __init__(self, options: Mapping[str, str], prefix: str, name: str) -> None:
        self.options = options
        self.base = f"{prefix}{name}."

    def key(self, option: str) -> str:
        return self.base + option

    def text(self, option: str) -> str | None:
        return self.options.get(self.key(option))

    def flag(self, option: str) -> bool:
        """A boolean option, false when absent."""
        return bool(self._value(option, BOOLEAN, False))

    def character(self, option: str, default: str | None) -> str | None:
        """A one-character option (backslash-t means a tab)."""
        value = self._value(option, CHARACTER, default)
        return None if value is None else str(value)

    def _value(self, option: str, kind: ValueKind, default: Any) -> Any:
        text = self.text(option)
        if text is None:
            return default
        try:
            return kind.parse(text, f"option '{self.key(option)}'")
        except ConfigError as error:
            raise CatalogError(str(error)) from None
