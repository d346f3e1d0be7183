"""The channel knobs a job reads from its settings, parsed once.

* ``execution.buffer-timeout`` (ms): the longest a partial output buffer waits before it is
  sent. The throughput/latency knob: 0 sends every record batch at once (lowest latency,
  most frames), larger values fill buffers (fewer, bigger frames), -1 sends only full
  buffers (and at events or end of input).
* ``execution.buffer-size`` (bytes) and ``execution.buffer-rows``: a buffer goes out when
  either is reached.
* ``execution.channel-credits``: buffers a receiving channel holds; with the buffer size it
  bounds the memory of every channel.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from flowsql.errors import FlowSQLError
from flowsql.settings import parse_bytes


@dataclass(frozen=True)
class ChannelSettings:
    buffer_timeout_ms: int = 100
    buffer_bytes: int = 1 << 20
    buffer_rows: int = 65536
    credits: int = 4

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> ChannelSettings:
        default = cls()
        return cls(
            buffer_timeout_ms=_parse_millis(settings.get("execution.buffer-timeout"),
                                            default.buffer_timeout_ms),
            buffer_bytes=_positive(parse_bytes(settings["execution.buffer-size"],
                                               "execution.buffer-size"), "execution.buffer-size")
            if "execution.buffer-size" in settings else default.buffer_bytes,
            buffer_rows=_positive_int(settings.get("execution.buffer-rows"), "execution.buffer-rows",
                                      default.buffer_rows),
            credits=_positive_int(settings.get("execution.channel-credits"),
                                  "execution.channel-credits", default.credits))


def _parse_millis(value: str | None, default: int) -> int:
    if value is None:
        return default
    match = re.fullmatch(r"\s*(-1|\d+)\s*(ms|s)?\s*", value)
    if not match:
        raise FlowSQLError(f"invalid execution.buffer-timeout '{value}' (milliseconds, e.g. "
                           "100, 0 to send every batch at once, -1 to send only full buffers)")
    millis = int(match.group(1))
    return millis * 1000 if match.group(2) == "s" and millis > 0 else millis


def _positive_int(value: str | None, key: str, default: int) -> int:
    if value is None:
        return default
    if not value.strip().isdigit():
        raise FlowSQLError(f"invalid {key} '{value}' (a positive integer)")
    return _positive(int(value), key)


def _positive(value: int, key: str) -> int:
    if value < 1:
        raise FlowSQLError(f"{key} must be at least 1, got {value}")
    return value
