"""Parsing setting values shared by the layers (sizes like '512mb', booleans, durations)."""

from __future__ import annotations

import re

from flowsql.errors import FlowSQLError

_UNITS = {"": 1, "b": 1, "kb": 2**10, "k": 2**10, "mb": 2**20, "m": 2**20, "gb": 2**30,
          "g": 2**30, "tb": 2**40, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(value: str, key: str = "size") -> int:
    """'512mb', '8 GiB', '1048576' -> bytes. Raises FlowSQLError naming the setting."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", value)
    if not match or match.group(2).lower() not in _UNITS:
        raise FlowSQLError(f"invalid size '{value}' for {key} (examples: 512mb, 8gb)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])
