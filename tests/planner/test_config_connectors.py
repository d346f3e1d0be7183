"""Connector declarations and CREATE TABLE option validation."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import CatalogError, ConfigError, OptionError, PlanError
from flowsql.planner.config.connectors import CONNECTORS, validate_table_options
from flowsql.runtime.connectors.implementations import IMPLEMENTATIONS


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), path)
    return path


def test_every_declared_connector_is_implemented_in_its_roles() -> None:
    assert IMPLEMENTATIONS.keys() == CONNECTORS.keys()
    for name, connector in CONNECTORS.items():
        implementation = IMPLEMENTATIONS[name]
        assert (implementation.scan is not None) == connector.source, name
        assert (implementation.sink is not None) == connector.sink, name


def test_a_misspelled_option_names_the_option(parquet: Path) -> None:
    session = flowsql.connect()
    with pytest.raises(OptionError, match=r"^table 't': unknown option 'fromat' for the "
                                          r"filesystem connector \(did you mean 'format'\?\)$"):
        session.sql(f"CREATE TABLE t WITH ('path' = '{parquet}', 'fromat' = 'parquet')")
    assert session.catalog.get("t") is None


@pytest.mark.parametrize(("options", "message"), [
    ("'connector' = 'filesystm', 'path' = 'x'",
     r"table 't': unknown connector 'filesystm' \(did you mean 'filesystem'\?\) "
     r"\(available: filesystem, datagen, print, blackhole, kafka, upsert-kafka, socket, "
     r"nexmark\)"),
    ("'format' = 'orc'", r"table 't': invalid value 'orc' for format \(allowed: parquet, csv, "
                         r"json\)"),
    ("'source.monitor-interval' = 'often'",
     r"table 't': invalid duration 'often' for source.monitor-interval"),
    ("'source.monitor-interval' = '0'",
     r"table 't': source.monitor-interval must be at least 1 ms, got '0'"),
    ("'sink.rolling-policy.file-size' = 'big'",
     r"table 't': invalid size 'big' for sink.rolling-policy.file-size"),
    ("'format' = 'csv', 'csv.field-delimiter' = ';;'",
     r"table 't': csv.field-delimiter must be one character, got ';;'"),
    ("'format' = 'csv', 'csv.ignore-first-line' = 'yes'",
     r"table 't': csv.ignore-first-line must be 'true' or 'false', got 'yes'"),
    ("'format' = 'json', 'csv.ignore-first-line' = 'true'",
     r"table 't': unknown option 'csv.ignore-first-line' for the filesystem connector; "
     r"'csv.ignore-first-line' is an option of format csv, the table's is json"),
])
def test_filesystem_option_values_are_validated(options: str, message: str) -> None:
    session = flowsql.connect()
    with pytest.raises(OptionError, match=f"^{message}"):
        session.sql(f"CREATE TABLE t (id BIGINT) WITH ('path' = '/nowhere', {options})")


def test_required_option_and_column_list() -> None:
    session = flowsql.connect()
    with pytest.raises(OptionError, match="^table 't': the filesystem connector needs 'path'$"):
        session.sql("CREATE TABLE t (id BIGINT) WITH ('format' = 'csv')")
    with pytest.raises(CatalogError, match="^table 'p': the print connector needs a column "
                                           "list$"):
        session.sql("CREATE TABLE p WITH ('connector' = 'print')")


@pytest.mark.parametrize(("options", "message"), [
    ("'fields.nope.kind' = 'random'",
     r"table 'g': datagen option 'fields.nope.kind' names no column of the table"),
    ("'fields.idd.min' = '1'", r"table 'g': datagen option 'fields.idd.min' names no column "
                               r"of the table \(did you mean 'id'\?\)"),
    ("'fields.id.kind' = 'counter'",
     r"table 'g': invalid value 'counter' for fields.id.kind \(allowed: random, sequence\)"),
    ("'fields.id.lenght' = '7'",
     r"table 'g': unknown option 'fields.id.lenght' for the datagen connector \(did you mean "
     r"'fields.id.length'\?\)"),
    ("'rows-per-secnd' = '5'", r"table 'g': unknown option 'rows-per-secnd' for the datagen "
                               r"connector \(did you mean 'rows-per-second'\?\)"),
    ("'number-of-rows' = 'many'", r"table 'g': number-of-rows must be an integer, got 'many'"),
])
def test_datagen_options_are_validated(options: str, message: str) -> None:
    session = flowsql.connect()
    with pytest.raises(OptionError, match=f"^{message}"):
        session.sql(f"CREATE TABLE g (id BIGINT) WITH ('connector' = 'datagen', {options})")


def test_print_options_are_validated() -> None:
    session = flowsql.connect()
    with pytest.raises(OptionError, match=r"unknown option 'print-identifer' for the print "
                                          r"connector \(did you mean 'print-identifier'\?\)"):
        session.sql("CREATE TABLE p (id BIGINT) WITH ('connector' = 'print', "
                    "'print-identifer' = 'x')")
    with pytest.raises(OptionError, match=r"^table 'b': unknown option 'path' for the "
                                          r"blackhole connector$"):
        session.sql("CREATE TABLE b (id BIGINT) WITH ('connector' = 'blackhole', 'path' = 'x')")


def test_valid_tables_keep_their_options_and_choices_are_lower_case(parquet: Path) -> None:
    session = flowsql.connect()
    session.sql(f"CREATE TABLE t WITH ('connector' = 'FileSystem', 'path' = '{parquet}', "
                "'format' = 'Parquet', 'sink.rolling-policy.file-size' = '1 MiB')")
    entry = session.catalog.get("t")
    assert entry.options == {"connector": "filesystem", "path": str(parquet),  # type: ignore[union-attr]
                             "format": "parquet", "sink.rolling-policy.file-size": "1 MiB"}
    assert session.sql("SELECT sum(id) AS s FROM t").to_arrow().to_pylist() == [{"s": 6}]


def test_validation_without_a_session() -> None:
    assert validate_table_options("g", {"connector": "datagen", "fields.ID.kind": "Sequence",
                                        "fields.ID.start": "1", "fields.ID.end": "3"},
                                  ["ID"]) == {
        "connector": "datagen", "fields.ID.kind": "sequence", "fields.ID.start": "1",
        "fields.ID.end": "3"}
    with pytest.raises(OptionError, match=r"'fields.Id.kind' names no column of the table "
                                          r"\(did you mean 'ID'\?\)"):
        validate_table_options("g", {"connector": "datagen", "fields.Id.kind": "random"},
                               ["ID"])
    with pytest.raises(ConfigError):
        validate_table_options("g", {"connector": "datagen", "seed": "x"}, ["id"])


def test_planning_asks_the_declarations(tmp_path: Path) -> None:
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    session.sql("CREATE TABLE src (k BIGINT, n BIGINT) WITH ('connector' = 'datagen', "
                "'number-of-rows' = '10', 'rows-per-second' = '0')")
    session.sql(f"CREATE TABLE files (k BIGINT, n BIGINT) WITH ('path' = '{tmp_path / 'o'}')")
    session.sql("CREATE TABLE out (k BIGINT, n BIGINT) WITH ('connector' = 'blackhole')")
    with pytest.raises(PlanError, match=r"table 'out' \(blackhole connector\) can only be "
                                        r"written to"):
        session.sql("SELECT * FROM out")
    with pytest.raises(PlanError, match=r"table 'files' \(filesystem sink\) accepts only "
                                        r"insert-only results.*write to a print or blackhole or upsert-kafka "
                                        r"table"):
        session.sql("INSERT INTO files SELECT k, count(*) FROM src GROUP BY k")
