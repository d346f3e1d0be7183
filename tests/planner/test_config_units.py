"""The one duration parser and the one memory-size parser."""

from __future__ import annotations

import pytest

from flowsql.errors import ConfigError, FlowSQLError
from flowsql.planner.config.units import parse_duration_ms, parse_memory_size


@pytest.mark.parametrize(("text", "millis"), [
    ("500 ms", 500), ("1 s", 1000), ("1 min", 60_000), ("2 h", 7_200_000), ("2h", 7_200_000),
    ("250", 250), ("0", 0), ("-1", -1), ("3 seconds", 3000), ("1d", 86_400_000),
    ("10 MS", 10), (" 5 s ", 5000), ("1m", 60_000), ("2 millis", 2), ("4 mins", 240_000),
])
def test_durations(text: str, millis: int) -> None:
    assert parse_duration_ms(text) == millis


@pytest.mark.parametrize("text", ["", "soon", "1 fortnight", "1.5 s", "s", "1 s s", "1 us",
                                  "- 1"])
def test_invalid_durations_name_the_key(text: str) -> None:
    with pytest.raises(ConfigError, match=f"invalid duration '{text}' for some.key"):
        parse_duration_ms(text, "some.key")


@pytest.mark.parametrize(("text", "size"), [
    ("512mb", 512 << 20), ("2 GiB", 2 << 30), ("1048576", 1 << 20), ("128mb", 128 << 20),
    ("1 kb", 1024), ("10", 10), ("2GB", 2 << 30), ("5 b", 5), ("1 kib", 1024),
    ("8g", 8 << 30), ("1.5 kb", 1536), ("3 bytes", 3), ("1tb", 1 << 40),
])
def test_memory_sizes(text: str, size: int) -> None:
    assert parse_memory_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "-1mb", "12 parsecs", "mb", "1 2 mb"])
def test_invalid_memory_sizes(text: str) -> None:
    with pytest.raises(ConfigError, match=f"invalid size '{text}'"):
        parse_memory_size(text)


def test_errors_are_flowsql_errors() -> None:
    with pytest.raises(FlowSQLError):
        parse_memory_size("much")
