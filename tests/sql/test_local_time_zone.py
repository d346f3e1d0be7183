"""table.local-time-zone: the same query gives each zone's wall-clock values (checked by
hand), in batch, streaming and on parallel workers (the zone travels inside the plan)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import ConfigError

# 0 s; 2024-03-10 10:00:00Z (Los Angeles springs forward from 02:00 PST to 03:00 PDT);
# 2024-11-03 08:30:00Z (Los Angeles' repeated 01:30, first as PDT)
EPOCHS = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                   "ms": pa.array([0, 1710064800000, 1730622600000], pa.int64())})

QUERY = """SELECT id,
  CAST(TO_TIMESTAMP_LTZ(ms, 3) AS TIMESTAMP(3)) AS local_ts,
  DATE_FORMAT(TO_TIMESTAMP_LTZ(ms, 3), 'yyyy-MM-dd HH:mm') AS formatted,
  FROM_UNIXTIME(CAST(ms / 1000 AS BIGINT)) AS from_unix,
  UNIX_TIMESTAMP(DATE_FORMAT(TO_TIMESTAMP_LTZ(ms, 3), 'yyyy-MM-dd HH:mm:ss')) * 1000 = ms
    AS round_trip,
  CAST(TO_TIMESTAMP_LTZ(ms, 3) AS DATE) AS local_date,
  HOUR(TO_TIMESTAMP_LTZ(ms, 3)) * 100 + EXTRACT(MINUTE FROM TO_TIMESTAMP_LTZ(ms, 3))
    AS local_hhmm
FROM t"""

EXPECTED = {
    "UTC": [("1970-01-01 00:00", "2024-03-10 10:00", "2024-11-03 08:30"),
            (dt.date(1970, 1, 1), dt.date(2024, 3, 10), dt.date(2024, 11, 3))],
    "Asia/Shanghai": [("1970-01-01 08:00", "2024-03-10 18:00", "2024-11-03 16:30"),
                      (dt.date(1970, 1, 1), dt.date(2024, 3, 10), dt.date(2024, 11, 3))],
    "America/Los_Angeles": [("1969-12-31 16:00", "2024-03-10 03:00", "2024-11-03 01:30"),
                            (dt.date(1969, 12, 31), dt.date(2024, 3, 10),
                             dt.date(2024, 11, 3))],
}


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("local_time_zone") / "t.parquet"
    pq.write_table(EPOCHS, file)
    return file


def _session(path: Path, **settings: str) -> flowsql.Session:
    session = flowsql.connect(**settings)
    session.sql(f"""CREATE TABLE t (id BIGINT, ms BIGINT)
                    WITH ('connector' = 'filesystem', 'path' = '{path}')""")
    return session


def _expected_rows(zone: str) -> list[dict[str, object]]:
    texts, dates = EXPECTED[zone]
    return [{"id": i + 1, "local_ts": dt.datetime.strptime(text, "%Y-%m-%d %H:%M"),
             "formatted": text, "from_unix": text + ":00", "round_trip": True,
             "local_date": day, "local_hhmm": int(text[11:13] + text[14:16])} for i, (text, day) in enumerate(zip(texts, dates))]


@pytest.mark.parametrize("zone", list(EXPECTED))
@pytest.mark.parametrize("mode", [{}, {"parallelism.default": "2"},
                                  {"execution.runtime-mode": "streaming"}],
                         ids=["batch", "parallel", "streaming"])
def test_ltz_conversions_follow_the_zone(path: Path, zone: str, mode: dict[str, str]) -> None:
    session = _session(path, **{"table.local-time-zone": zone, **mode})
    rows = session.sql(QUERY).to_arrow().to_pylist()
    rows = sorted(({k: v for k, v in r.items() if k in _expected_rows(zone)[0]}
                   for r in rows), key=lambda r: r["id"])
    assert rows == _expected_rows(zone)


@pytest.mark.parametrize("zone, wall, instant", [
    ("UTC", "2024-03-10 02:30:00", dt.datetime(2024, 3, 10, 2, 30)),
    ("Asia/Shanghai", "2024-03-10 02:30:00", dt.datetime(2024, 3, 9, 18, 30)),
    # skipped by the spring change: moved forward by the hour (Java's atZone)
    ("America/Los_Angeles", "2024-03-10 02:30:00", dt.datetime(2024, 3, 10, 10, 30)),
    # repeated by the autumn change: the earlier instant (PDT)
    ("America/Los_Angeles", "2024-11-03 01:30:00", dt.datetime(2024, 11, 3, 8, 30)),
    ("+08:00", "2024-03-10 02:30:00", dt.datetime(2024, 3, 9, 18, 30)),
    ("GMT-05:30", "2024-03-10 02:30:00", dt.datetime(2024, 3, 10, 8, 0)),
])
def test_timestamp_to_ltz_reads_wall_clock_in_the_zone(path: Path, zone: str, wall: str,
                                                       instant: dt.datetime) -> None:
    session = _session(path, **{"table.local-time-zone": zone})
    # a column (computed per row) and a literal (converted when the query is bound)
    sql = f"""SELECT CAST(ts AS TIMESTAMP_LTZ(3)) AS from_column,
                     CAST(TIMESTAMP '{wall}' AS TIMESTAMP_LTZ(3)) AS from_literal,
                     UNIX_TIMESTAMP(s) AS parsed,
                     CAST(CAST(ts AS TIMESTAMP_LTZ(3)) AS TIMESTAMP(3)) AS back
              FROM (SELECT TIMESTAMP '{wall}' + INTERVAL '1' SECOND * (id - 1) AS ts,
                           SUBSTRING(CONCAT('{wall}', CAST(id AS STRING)), 1, 19) AS s
                    FROM t WHERE id = 1)"""
    row = session.sql(sql).to_arrow().to_pylist()[0]
    utc = instant.replace(tzinfo=dt.UTC)
    assert row["from_column"] == utc and row["from_literal"] == utc
    assert row["parsed"] == int(utc.timestamp())
    shown = dt.datetime.strptime(wall, "%Y-%m-%d %H:%M:%S")
    if zone == "America/Los_Angeles" and wall.startswith("2024-03-10"):
        shown += dt.timedelta(hours=1)  # the skipped time reads back as the moved one
    assert row["back"] == shown


@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai", "America/Los_Angeles", "+14:00"])
def test_current_date_is_the_date_of_current_timestamp(path: Path, zone: str) -> None:
    session = _session(path, **{"table.local-time-zone": zone})
    row = session.sql("SELECT CURRENT_DATE AS d, CAST(CURRENT_TIMESTAMP AS DATE) AS c, "
                      "CAST(LOCALTIMESTAMP AS DATE) AS l").to_arrow().to_pylist()[0]
    assert row["d"] == row["c"] == row["l"]


def test_an_invalid_zone_names_the_key() -> None:
    session = flowsql.connect()
    with pytest.raises(ConfigError, match="table.local-time-zone"):
        session.sql("SET 'table.local-time-zone' = 'Mars/Olympus'")
    with pytest.raises(ConfigError, match="table.local-time-zone"):
        flowsql.connect(**{"table.local-time-zone": "+25:00"})


def test_try_cast_converts_in_the_zone_and_is_null_for_bad_text(path: Path) -> None:
    session = _session(path, **{"table.local-time-zone": "Asia/Shanghai"})
    row = session.sql("""SELECT TRY_CAST(TO_TIMESTAMP_LTZ(ms, 3) AS STRING) AS shown,
                                TRY_CAST(CONCAT('1970-01-01 08:00:0', CAST(id - 1 AS STRING))
                                         AS TIMESTAMP_LTZ(3)) AS instant,
                                TRY_CAST(CONCAT('no time', CAST(id AS STRING))
                                         AS TIMESTAMP_LTZ(3)) AS bad
                         FROM t WHERE id = 1""").to_arrow().to_pylist()[0]
    # the text of the local TIMESTAMP(3), as CAST(TIMESTAMP(3) AS STRING) spells it
    assert row == {"shown": "1970-01-01 08:00:00.000",
                   "instant": dt.datetime(1970, 1, 1, tzinfo=dt.UTC), "bad": None}
