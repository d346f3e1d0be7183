"""table.local-time-zone values: IANA names and fixed offsets are accepted and normalized to
the spellings Arrow, zoneinfo and Spark share; anything else is an error naming the key."""

from __future__ import annotations

import datetime as dt

import pytest

from flowsql.errors import ConfigError
from flowsql.planner.config import SettingValues, validate_setting
from flowsql.planner.config.time_zone import parse_time_zone, tzinfo_of


@pytest.mark.parametrize("text, zone", [
    ("UTC", "UTC"), ("Asia/Shanghai", "Asia/Shanghai"), (" Europe/Berlin ", "Europe/Berlin"),
    ("+08:00", "+08:00"), ("GMT+08:00", "+08:00"), ("GMT-8", "-08:00"), ("UTC+0530", "+05:30"),
    ("GMT", "UTC"), ("Z", "UTC"),
])
def test_valid_zones_are_normalized(text: str, zone: str) -> None:
    assert parse_time_zone(text, "table.local-time-zone") == zone


@pytest.mark.parametrize("text", ["Mars/Olympus", "", "+19:00", "GMT+08:75", "asia shanghai",
                                  "../etc/passwd"])
def test_invalid_zones_name_the_key(text: str) -> None:
    with pytest.raises(ConfigError, match="table.local-time-zone"):
        validate_setting("table.local-time-zone", text)


def test_fixed_offsets_become_python_offsets() -> None:
    assert tzinfo_of("-05:30").utcoffset(None) == -dt.timedelta(hours=5, minutes=30)
    assert tzinfo_of("Asia/Shanghai").utcoffset(dt.datetime(2024, 1, 1)) == \
        dt.timedelta(hours=8)


def test_the_default_is_utc_and_reads_normalized() -> None:
    assert SettingValues({}).time_zone("table.local-time-zone") == "UTC"
    assert SettingValues({"table.local-time-zone": "GMT+08:00"}).time_zone(
        "table.local-time-zone") == "+08:00"
