"""The settings registry: aliases, unknown keys, validation when a value is set, typed reads."""

from __future__ import annotations

import pytest

import flowsql
from flowsql.errors import ConfigError
from flowsql.planner.config.settings import (
    SETTINGS,
    SettingValues,
    default_settings,
    resolve_setting,
    validate_setting,
)
from flowsql.session.session import DEFAULT_SETTINGS


def test_every_key_and_alias_is_declared_once() -> None:
    names = [name for option in SETTINGS for name in (option.key, *option.aliases)]
    assert len(names) == len(set(names))


def test_a_new_session_lists_canonical_keys_with_their_declared_defaults() -> None:
    assert all(resolve_setting(key) == key for key in DEFAULT_SETTINGS)
    assert set(DEFAULT_SETTINGS) <= set(default_settings())


def test_every_declared_default_is_valid() -> None:
    for option in SETTINGS:
        if option.default is not None:
            option.parse(option.default)


@pytest.mark.parametrize(("alias", "key"), [
    ("execution.engine", "engine"), ("pipeline.max-parallelism", "max_parallelism"),
    ("execution.buffer-timeout.interval", "execution.buffer-timeout"),
    ("parallelism", "parallelism.default"), ("memory_budget", "execution.memory-budget"),
    ("batch_size", "execution.batch-size"), ("engine", "engine"),
])
def test_aliases_resolve_to_the_canonical_key(alias: str, key: str) -> None:
    assert resolve_setting(alias) == key


def test_set_stores_an_alias_under_its_canonical_key() -> None:
    session = flowsql.connect()
    session.sql("SET 'pipeline.max-parallelism' = '64'")
    assert session.settings["max_parallelism"] == "64"
    assert "pipeline.max-parallelism" not in session.settings
    session.sql("RESET 'pipeline.max-parallelism'")
    assert session.settings["max_parallelism"] == "128"


def test_connect_keywords_are_settings_or_aliases() -> None:
    session = flowsql.connect(parallelism=2, memory_budget="1gb", max_parallelism=64,
                              **{"execution.runtime-mode": "streaming"})
    assert (session.settings["parallelism.default"], session.settings["execution.memory-budget"],
            session.settings["max_parallelism"], session.settings["execution.runtime-mode"]) \
        == ("2", "1gb", "64", "streaming")


@pytest.mark.parametrize(("key", "suggestion"), [
    ("execution.runtime-mod", "execution.runtime-mode"),
    ("parallelism.defualt", "parallelism.default"),
    ("pipeline.auto-watermark-intervall", "pipeline.auto-watermark-interval"),
    ("execution.batchsize", "execution.batch-size"),
])
def test_unknown_keys_suggest_the_closest(key: str, suggestion: str) -> None:
    session = flowsql.connect()
    with pytest.raises(ConfigError, match=rf"^unknown setting '{key}' \(did you mean "
                                          rf"'{suggestion}'\?\)$"):
        session.sql(f"SET '{key}' = '1'")
    assert key not in session.settings


def test_unknown_key_without_a_close_one_and_unknown_keyword() -> None:
    with pytest.raises(ConfigError, match=r"^unknown setting 'colour'$"):
        flowsql.connect().set("colour", "blue")
    with pytest.raises(ConfigError, match="unknown setting 'paralelism' \\(did you mean "
                                          "'parallelism'\\?\\)"):
        flowsql.connect(paralelism=2)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("execution.runtime-mode", "sometimes",
     r"invalid value 'sometimes' for execution.runtime-mode \(allowed: batch, streaming\)"),
    ("engine", "oracle", r"invalid value 'oracle' for engine \(allowed: local, spark\)"),
    ("parallelism.default", "0", r"parallelism.default must be at least 1, got '0'"),
    ("parallelism.default", "two", r"parallelism.default must be an integer, got 'two'"),
    ("max_parallelism", "40000", r"max_parallelism must be at most 32768, got '40000'"),
    ("execution.memory-budget", "lots", r"invalid size 'lots' for execution.memory-budget"),
    ("pipeline.auto-watermark-interval", "soon",
     r"invalid duration 'soon' for pipeline.auto-watermark-interval"),
    ("execution.buffer-timeout", "-2", r"execution.buffer-timeout must be at least -1 ms"),
    ("table.exec.mini-batch.enabled", "yes",
     r"table.exec.mini-batch.enabled must be 'true' or 'false', got 'yes'"),
])
def test_values_are_validated_when_set(key: str, value: str, message: str) -> None:
    session = flowsql.connect()
    before = dict(session.settings)
    with pytest.raises(ConfigError, match=f"^{message}"):
        session.sql(f"SET '{key}' = '{value}'")
    assert session.settings == before


def test_choices_are_stored_as_the_lower_case_word() -> None:
    assert validate_setting("execution.engine", "Spark") == ("engine", "spark")
    assert validate_setting("execution.batch-size", "1000") == ("execution.batch-size", "1000")


def test_prefix_family_passes_through_any_key() -> None:
    session = flowsql.connect(**{"spark.sql.shuffle.partitions": "4"})
    session.set("spark.executor.memory", "2g")
    assert session.settings["spark.sql.shuffle.partitions"] == "4"
    assert session.settings["spark.executor.memory"] == "2g"
    with pytest.raises(ConfigError, match="spark.broadcast-rows must be an integer"):
        session.set("spark.broadcast-rows", "many")


def test_typed_reads_use_the_value_an_alias_or_the_default() -> None:
    values = SettingValues({"pipeline.auto-watermark-interval": "1 s",
                            "pipeline.max-parallelism": "16",
                            "execution.buffer-size": "64kb",
                            "optimizer.disable-rules": " a, b ,,"})
    assert values.duration_ms("pipeline.auto-watermark-interval") == 1000
    assert values.integer("max_parallelism") == 16
    assert values.memory_size("execution.buffer-size") == 65536
    assert values.names("optimizer.disable-rules") == ("a", "b")
    assert values.integer("execution.batch-size") == 65536
    assert values.boolean("table.exec.mini-batch.enabled") is False
    assert values.string("execution.runtime-mode") == "batch"
    assert values.duration_ms("table.exec.source.idle-timeout") == 0


def test_typed_read_of_an_invalid_value_names_the_key() -> None:
    with pytest.raises(ConfigError, match="execution.batch-size must be an integer"):
        SettingValues({"execution.batch-size": "lots"}).integer("execution.batch-size")


def test_typed_read_of_the_wrong_kind_is_a_programming_error() -> None:
    with pytest.raises(TypeError, match="declared as duration, read as integer"):
        SettingValues({}).integer("pipeline.auto-watermark-interval")


def test_durations_are_accepted_in_every_duration_setting() -> None:
    session = flowsql.connect(**{"execution.runtime-mode": "streaming",
                                 "pipeline.auto-watermark-interval": "1 s",
                                 "table.exec.source.idle-timeout": "2 min",
                                 "execution.buffer-timeout": "50 ms"})
    assert session.sql("SELECT 1 AS one").to_arrow().to_pylist() == [{"one": 1}]


def test_parallelism_is_bounded_by_a_multiple_of_the_cpu_cores(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    session = flowsql.connect()
    session.sql("SET 'parallelism.default' = '8'")
    assert session.settings["parallelism.default"] == "8"
    with pytest.raises(ConfigError, match=r"^parallelism.default must be at most 8 "
                                          r"\(4 x 2 CPU cores\), got '1000'$"):
        session.sql("SET 'parallelism.default' = '1000'")
    assert session.settings["parallelism.default"] == "8"
    with pytest.raises(ConfigError, match=r"^parallelism.default must be at most 8"):
        flowsql.connect(parallelism=1000)
