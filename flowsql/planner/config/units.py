"""The one parser for durations and the one parser for memory sizes.

Every setting and connector option that holds a duration or a size goes through these two
functions, so ``'1 s'`` means the same thing everywhere. The syntax is Flink's
(``TimeUtils.parseDuration`` and ``MemorySize.parse``):

* a duration is an integer and an optional unit, spaces allowed, case-insensitive:
  ``500 ms``, ``1 s``, ``1 min``, ``2 h``, ``3 days``. A bare number is milliseconds, as
  in Flink. The result is whole milliseconds, the resolution of every clock of the runtime,
  so sub-millisecond units are not accepted. A leading ``-`` is parsed (``-1`` is a
  sentinel some settings allow); whether a sign is allowed is the declaration's business.
* a memory size is a number and an optional unit: ``512mb``, ``2 GiB``, ``1048576``. Units
  are powers of 1024 whatever their spelling (``kb`` = ``kib`` = 1024 bytes), as in Flink;
  a bare number is bytes.

Both raise :class:`~flowsql.errors.ConfigError` whose message starts ``invalid duration``
or ``invalid size`` and names the key being parsed.
"""

from __future__ import annotations

import os
import re

from flowsql.errors import ConfigError

_MILLIS_PER_UNIT: dict[str, int] = {
    **dict.fromkeys(("ms", "milli", "millis", "millisecond", "milliseconds"), 1),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1000),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60_000),
    **dict.fromkeys(("h", "hour", "hours"), 3_600_000),
    **dict.fromkeys(("d", "day", "days"), 86_400_000),
}

_BYTES_PER_UNIT: dict[str, int] = {
    **dict.fromkeys(("", "b", "bytes"), 1),
    **dict.fromkeys(("k", "kb", "kib", "kibibytes"), 1 << 10),
    **dict.fromkeys(("m", "mb", "mib", "mebibytes"), 1 << 20),
    **dict.fromkeys(("g", "gb", "gib", "gibibytes"), 1 << 30),
    **dict.fromkeys(("t", "tb", "tib", "tebibytes"), 1 << 40),
}

_DURATION = re.compile(r"\s*(-?\d+)\s*([a-zA-Z]*)\s*")
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")

DURATION_EXAMPLES = "'500 ms', '1 s', '1 min', '2 h'"
SIZE_EXAMPLES = "'512mb', '2 GiB', '1048576'"


def parse_duration_ms(text: str, key: str | None = None) -> int:
    """Milliseconds of a duration such as ``'1 s'``; a bare number is milliseconds.
    ``key`` names the setting or option in the error message."""
    match = _DURATION.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    if match is None or (unit and unit not in _MILLIS_PER_UNIT):
        where = f" for {key}" if key else ""
        raise ConfigError(f"invalid duration '{text}'{where} (expected e.g. "
                          f"{DURATION_EXAMPLES}; a bare number is milliseconds)")
    return int(match.group(1)) * _MILLIS_PER_UNIT.get(unit, 1)


def parse_memory_size(text: str, key: str | None = None) -> int:
    """Bytes of a memory size such as ``'512mb'`` or ``'2 GiB'``; a bare number is bytes.
    ``key`` names the setting or option in the error message."""
    match = _SIZE.fullmatch(text)
    if match is None or match.group(2).lower() not in _BYTES_PER_UNIT:
        where = f" for {key}" if key else ""
        raise ConfigError(f"invalid size '{text}'{where} (expected e.g. {SIZE_EXAMPLES})")
    return int(float(match.group(1)) * _BYTES_PER_UNIT[match.group(2).lower()])


def physical_memory_bytes() -> int:
    """This machine's physical memory (8 GiB when the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return 8 << 30


def parse_memory_budget(text: str, key: str | None = None) -> int:
    """Bytes of a memory size (:func:`parse_memory_size`) or of ``'N%'``, that share of
    this machine's physical memory (``'25%'``), so a default fits the machine it runs on."""
    stripped = text.strip()
    if stripped.endswith("%"):
        try:
            percent = float(stripped[:-1])
        except ValueError:
            percent = -1.0
        if not 0 < percent <= 100:
            where = f" for {key}" if key else ""
            raise ConfigError(f"invalid size '{text}'{where} (a percentage of physical "
                              "memory must be above 0% and at most 100%)")
        return int(physical_memory_bytes() * percent / 100)
    return parse_memory_size(text, key)
