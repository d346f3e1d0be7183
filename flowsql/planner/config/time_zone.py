"""The session time zone (``table.local-time-zone``): which spellings are valid, and the
one spelling every consumer (Arrow kernels, Python folding, Spark) understands.

Flink accepts an IANA region name (``Asia/Shanghai``, ``UTC``) or a fixed offset written as
``GMT+08:00``; we also accept the bare offset ``+08:00``. A valid value is normalized to a
region name or to ``+HH:MM``, the two forms Arrow's timestamp zone, ``zoneinfo`` (through
:func:`tzinfo_of`) and Spark's ``spark.sql.session.timeZone`` all read the same way.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from functools import lru_cache

from flowsql.errors import ConfigError

_OFFSET = re.compile(r"^(?:GMT|UTC)?([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)


def parse_time_zone(text: str, key: str) -> str:
    """``text`` as a normalized zone (region name or ``+HH:MM``); ConfigError naming ``key``
    when it is neither an IANA zone known to ``zoneinfo`` nor a fixed offset within 18
    hours."""
    value = text.strip()
    offset = _OFFSET.match(value)
    if offset is not None:
        sign, hours, minutes = offset.group(1), int(offset.group(2)), int(offset.group(3) or 0)
        if hours * 60 + minutes <= 18 * 60 and minutes < 60:
            return f"{sign}{hours:02d}:{minutes:02d}"
    elif value.upper() in ("GMT", "Z"):
        return "UTC"
    else:
        try:
            zoneinfo.ZoneInfo(value)
            return value
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            pass
    raise ConfigError(f"invalid time zone '{text}' for {key} (an IANA zone such as "
                      f"'Asia/Shanghai' or a fixed offset such as '+08:00' or 'GMT+08:00')")


@lru_cache(maxsize=64)
def tzinfo_of(zone: str) -> dt.tzinfo:
    """The Python ``tzinfo`` of a normalized zone (see :func:`parse_time_zone`)."""
    offset = _OFFSET.match(zone)
    if offset is None:
        return zoneinfo.ZoneInfo(zone)
    sign = -1 if offset.group(1) == "-" else 1
    return dt.timezone(sign * dt.timedelta(hours=int(offset.group(2)),
                                           minutes=int(offset.group(3) or 0)))
