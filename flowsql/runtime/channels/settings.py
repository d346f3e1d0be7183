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

from collections.abc import Mapping
from dataclasses import dataclass

from flowsql.planner.config.settings import SettingValues

#: the declared defaults
_DEFAULTS = SettingValues({})


@dataclass(frozen=True)
class ChannelSettings:
    buffer_timeout_ms: int = _DEFAULTS.duration_ms("execution.buffer-timeout")
    buffer_bytes: int = _DEFAULTS.memory_size("execution.buffer-size")
    buffer_rows: int = _DEFAULTS.integer("execution.buffer-rows")
    credits: int = _DEFAULTS.integer("execution.channel-credits")

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> ChannelSettings:
        """The channel knobs of ``settings`` (a ConfigError names an invalid one)."""
        values = SettingValues(settings)
        return cls(buffer_timeout_ms=values.duration_ms("execution.buffer-timeout"),
                   buffer_bytes=values.memory_size("execution.buffer-size"),
                   buffer_rows=values.integer("execution.buffer-rows"),
                   credits=values.integer("execution.channel-credits"))
