"""``flowsql nexmark gen --format json``: newline-delimited JSON with the Parquet output's
content -- read back by a strict JSON parser and by Arrow's JSON reader, and compared in
full with the Parquet files of the same configuration; timestamps in Flink's SQL form."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq
import pytest

from flowsql.nexmark import generate
from flowsql.nexmark.cli import main
from flowsql.nexmark.generate import generate_files, json_values
from flowsql.nexmark.generator import KINDS, SCHEMAS, GeneratorConfig

CONFIG = GeneratorConfig(events=3000, seed=5)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    parquet, json_dir = tmp_path_factory.mktemp("parquet"), tmp_path_factory.mktemp("json")
    generate_files(CONFIG, parquet)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(generate, "CHUNK_EVENTS", 700)  # several chunks appended to one file
        rows = generate_files(CONFIG, json_dir, "json")
    assert rows == {kind: pq.read_table(parquet / kind).num_rows for kind in KINDS}
    return parquet, json_dir


def _sql_timestamp(value: dt.datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"


@pytest.mark.parametrize("kind", KINDS)
def test_each_line_is_a_json_object_with_the_parquet_row(both: tuple[Path, Path],
                                                         kind: str) -> None:
    parquet, json_dir = both
    expected = pq.read_table(parquet / kind).to_pylist()
    lines = (json_dir / kind / "part-0.json").read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(expected) > 0
    got = [json.loads(line) for line in lines[:-1]]
    for row in expected:
        for name, value in row.items():
            if isinstance(value, dt.datetime):
                row[name] = _sql_timestamp(value)
    assert got == expected
    assert list(got[0]) == SCHEMAS[kind].names


@pytest.mark.parametrize("kind", KINDS)
def test_arrow_reads_the_json_back_as_the_parquet_table(both: tuple[Path, Path],
                                                       kind: str) -> None:
    parquet, json_dir = both
    options = pajson.ParseOptions(explicit_schema=SCHEMAS[kind])
    got = pajson.read_json(json_dir / kind / "part-0.json", parse_options=options)
    assert got.equals(pq.read_table(parquet / kind).select(SCHEMAS[kind].names))


def test_strings_are_escaped_and_nulls_written_as_null() -> None:
    texts = ['plain', 'a "quote"', "back\\slash", "new\nline\ttab\r", "\x00\x01\x1f",
             "üñí €", None, ""]
    batch = pa.record_batch({"s": pa.array(texts, pa.string()),
                             "n": pa.array([1, None, -3, 4, 5, 6, 7, 8], pa.int64()),
                             "t": pa.array([dt.datetime(2024, 2, 29, 23, 59, 59, 999000),
                                            None, *[dt.datetime(1970, 1, 1)] * 6],
                                           pa.timestamp("ms"))})
    assert [json.loads(v) for v in json_values(batch.column(0)).to_pylist()] == texts
    assert json_values(batch.column(1)).to_pylist()[:3] == ["1", "null", "-3"]
    assert json_values(batch.column(2)).to_pylist()[:3] == [
        '"2024-02-29 23:59:59.999"', "null", '"1970-01-01 00:00:00.000"']


def test_cli_gen_format_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["nexmark", "gen", "--events", "1000", "--out", str(tmp_path),
                 "--format", "json"]) == 0
    assert sorted(p.name for p in (tmp_path / "bid").iterdir()) == ["part-0.json"]
    assert len((tmp_path / "bid" / "part-0.json").read_text().splitlines()) == 920
    assert "920 rows" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["nexmark", "gen", "--events", "10", "--out", str(tmp_path), "--format", "csv"])


def test_a_json_filesystem_table_reads_the_bids_of_the_parquet_files(
        both: tuple[Path, Path]) -> None:
    import flowsql

    parquet, json_dir = both
    session = flowsql.connect()
    session.sql(f"""CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT,
                      channel STRING, url STRING, `dateTime` TIMESTAMP(3), extra STRING)
                    WITH ('connector' = 'filesystem', 'path' = '{json_dir / 'bid'}',
                          'format' = 'json')""")
    got = session.sql("SELECT * FROM bid").to_arrow()
    expected = pq.read_table(parquet / "bid")
    assert got.num_rows == expected.num_rows > 0
    assert sorted(got.to_pylist(), key=repr) == sorted(expected.to_pylist(), key=repr)
