"""What one declared key is: its value kind, default, allowed values, bounds and aliases.

Settings (``SET 'key' = 'value'``) and connector options (``WITH ('key' = 'value')``) are
both declared as :class:`Option` values; ``Option.parse`` is the only place a raw string
becomes a typed value, so validation when a value is set and conversion when it is read
cannot disagree. Values stay strings wherever they are stored (session settings, table
options): they are what the user wrote, and they travel to worker processes as text.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flowsql.errors import ConfigError
from flowsql.planner.config.time_zone import parse_time_zone
from flowsql.planner.config.units import (
    parse_duration_ms,
    parse_memory_budget,
    parse_memory_size,
)


def _string(text: str, key: str) -> str:
    return text


def _boolean(text: str, key: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ConfigError(f"{key} must be 'true' or 'false', got '{text}'")
    return lowered == "true"


def _integer(text: str, key: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ConfigError(f"{key} must be an integer, got '{text}'") from None


def _number(text: str, key: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise ConfigError(f"{key} must be a number, got '{text}'") from None


def _character(text: str, key: str) -> str:
    character = "\t" if text == "\\t" else text
    if len(character) != 1:
        raise ConfigError(f"{key} must be one character, got '{text}'")
    return character


def _names(text: str, key: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


@dataclass(frozen=True)
class ValueKind:
    """How a raw string becomes a value: ``parse(text, key)`` returns the typed value or
    raises ConfigError naming ``key``. ``name`` is what the configuration page shows."""

    name: str
    parse: Callable[[str, str], Any]


STRING = ValueKind("string", _string)
BOOLEAN = ValueKind("boolean", _boolean)
INTEGER = ValueKind("integer", _integer)
NUMBER = ValueKind("number", _number)
#: whole milliseconds (see ``units.parse_duration_ms``)
DURATION = ValueKind("duration", parse_duration_ms)
#: bytes (see ``units.parse_memory_size``)
MEMORY_SIZE = ValueKind("memory size", parse_memory_size)
#: bytes: a memory size, or ``N%`` of this machine's physical memory (see
#: ``units.parse_memory_budget``)
MEMORY_BUDGET = ValueKind("memory size or % of physical memory", parse_memory_budget)
#: one character; the two characters ``\\t`` mean a tab
CHARACTER = ValueKind("character", _character)
#: a comma-separated list of names, as a tuple (empty entries dropped)
NAMES = ValueKind("list of names", _names)
#: an IANA zone or a fixed offset, normalized (see ``time_zone.parse_time_zone``)
TIME_ZONE = ValueKind("time zone", parse_time_zone)


@dataclass(frozen=True)
class Option:
    """One declared key.

    ``default`` is a raw string like a user's (None: unset unless given); ``allowed``
    restricts the value to these words (compared case-insensitively, parsed as the
    lower-case word); ``minimum``/``maximum`` bound integers, numbers, durations (in
    milliseconds) and sizes (in bytes); ``aliases`` are other spellings of the key
    (Flink's older or newer names, keyword-argument names), resolved to ``key``.
    ``required`` is for connector options a table must have. ``maximum_per_core`` bounds
    an integer by that multiple of this machine's CPU cores (``os.cpu_count()``), for
    values that start one process or thread each: the bound follows the machine, so the
    configuration page states the multiple rather than a number.
    """

    key: str
    kind: ValueKind
    default: str | None
    description: str
    aliases: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    required: bool = False
    maximum_per_core: int | None = None

    def parse(self, text: str) -> Any:
        """The typed value of ``text``; ConfigError naming the key when it is invalid."""
        if self.allowed:
            word = text.strip().lower()
            if word not in self.allowed:
                raise ConfigError(f"invalid value '{text}' for {self.key} (allowed: "
                                  f"{', '.join(self.allowed)})")
            return word
        value = self.kind.parse(text, self.key)
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(f"{self.key} must be at least {self._bound(self.minimum)}, "
                              f"got '{text}'")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(f"{self.key} must be at most {self._bound(self.maximum)}, "
                              f"got '{text}'")
        if self.maximum_per_core is not None:
            cores = os.cpu_count() or 1
            bound = self.maximum_per_core * cores
            if value > bound:
                raise ConfigError(f"{self.key} must be at most {bound} "
                                  f"({self.maximum_per_core} x {cores} CPU cores), "
                                  f"got '{text}'")
        return value

    def read(self, raw: Mapping[str, str]) -> Any:
        """The typed value of this key in ``raw`` (under its key or an alias), else of its
        default; None when neither is set."""
        for name in (self.key, *self.aliases):
            if name in raw:
                return self.parse(raw[name])
        return None if self.default is None else self.parse(self.default)

    def _bound(self, bound: int) -> str:
        unit = " bytes" if self.kind.name.startswith("memory size") else (
            " ms" if self.kind.name == "duration" else "")
        return f"{bound}{unit}"
