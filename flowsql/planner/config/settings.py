"""Every session setting, declared once: key, kind, default, allowed values, aliases, text.

``Session.set`` / ``SET`` / ``flowsql.connect(**kwargs)`` resolve a key here
(:func:`validate_setting`): an alias becomes its canonical key, an unknown key is a
ConfigError with the closest declared key, and the value is parsed at once, so a bad value
fails the ``SET``, not the first query. Code that reads a setting asks
:class:`SettingValues` for a typed value; the default lives only here. Keys under a
:class:`PrefixFamily` (``spark.*``) are not declared one by one: they pass through to the
system that owns them.

The configuration page ``docs/configuration.md`` is generated from these declarations
(``flowsql.planner.config.reference``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flowsql.errors import ConfigError
from flowsql.planner.config.suggest import did_you_mean
from flowsql.planner.config.values import (
    BOOLEAN,
    DURATION,
    INTEGER,
    MEMORY_BUDGET,
    MEMORY_SIZE,
    NAMES,
    NUMBER,
    STRING,
    TIME_ZONE,
    Option,
    ValueKind,
)

#: the largest number of key groups the partitioning supports
MAX_KEY_GROUPS = 2**15
#: the most subtasks per operator for each CPU core: more worker processes than this only
#: contend for the cores (and each holds its own memory)
PARALLELISM_PER_CORE = 4

SETTINGS: tuple[Option, ...] = (
    Option("engine", STRING, "local",
           "Where queries run: the local dataflow runtime or PySpark (bounded queries only).",
           aliases=("execution.engine",), allowed=("local", "spark")),
    Option("execution.runtime-mode", STRING, "batch",
           "Whether queries run as bounded batch jobs or as streams producing a changelog.",
           allowed=("batch", "streaming")),
    Option("sql-client.execution.result-mode", STRING, "tableau",
           "How the interactive shell shows a streaming query's result: 'tableau' prints "
           "rows and changes as they come, 'changelog' prints every change with its kind "
           "(+I, -U, +U, -D), 'table' opens a full-screen view of the current result "
           "updating in place (q or Ctrl-C leaves it and cancels the query).",
           aliases=("execution.result-mode",), allowed=("tableau", "changelog", "table")),
    Option("execution.memory-budget", MEMORY_BUDGET, "25%",
           "Memory the blocking operators of one task (sorts, hash-join builds, aggregates, "
           "window partitions, set operations) hold together before they spill to "
           "io.tmp.dirs: a size ('2 GiB') or a percentage of the machine's physical memory "
           "(the default, 25%, is per task: each worker process of a parallel query has "
           "its own).",
           aliases=("memory_budget",), minimum=1),
    Option("io.tmp.dirs", STRING, None,
           "Directories for spill files, separated by commas (Flink's key); each query "
           "writes below a private directory there, removed when it ends, fails or is "
           "cancelled (unset: the system's temporary directory)."),
    Option("execution.batch-size", INTEGER, "65536",
           "Most rows in one record batch produced by a source or operator.",
           aliases=("batch_size",), minimum=1),
    Option("parallelism.default", INTEGER, "1",
           "Subtasks per operator; above 1 queries run on worker processes with exchanges "
           "(one process per subtask, hence the bound by the CPU cores).",
           aliases=("parallelism",), minimum=1,
           maximum_per_core=PARALLELISM_PER_CORE),
    Option("max_parallelism", INTEGER, "128",
           "Number of key groups keyed state is split into: the most subtasks a keyed "
           "operator can be rescaled to.",
           aliases=("pipeline.max-parallelism",), minimum=1, maximum=MAX_KEY_GROUPS),
    Option("optimizer.broadcast-threshold-rows", INTEGER, "100000",
           "Largest estimated build side (rows) a parallel hash join broadcasts instead of "
           "hash-partitioning both sides.", minimum=0),
    Option("optimizer.small-query-on-one-subtask", BOOLEAN, "true",
           "With parallelism.default above 1, run a batch query on one subtask in the "
           "session when the cost model finds that cheaper than a parallel plan (false: "
           "always plan for the workers)."),
    Option("optimizer.share-subplans", BOOLEAN, "true",
           "Run identical subplans of a batch query (a CTE or view referenced twice) once "
           "and let every reference read the buffered output (false: run each copy)."),
    Option("optimizer.disable-rules", NAMES, "",
           "Comma-separated names of logical rewrite rules to skip."),
    Option("execution.buffer-timeout", DURATION, "100",
           "Longest a partial output buffer waits before it is sent: 0 sends every batch at "
           "once (lowest latency), -1 sends only full buffers.",
           aliases=("execution.buffer-timeout.interval",), minimum=-1),
    Option("execution.buffer-size", MEMORY_SIZE, "1mb",
           "Bytes after which an output buffer is sent.", minimum=1),
    Option("execution.buffer-rows", INTEGER, "65536",
           "Rows after which an output buffer is sent.", minimum=1),
    Option("execution.channel-credits", INTEGER, "4",
           "Buffers a receiving channel holds; with the buffer size it bounds the memory of "
           "every channel.", minimum=1),
    Option("pipeline.auto-watermark-interval", DURATION, "200",
           "How often a source emits a watermark (0: with every batch).", minimum=0),
    Option("table.exec.source.idle-timeout", DURATION, "0",
           "A source input without records for this long is left out of the watermark "
           "minimum until it sends again (0: never idle).", minimum=0),
    Option("table.exec.mini-batch.enabled", BOOLEAN, "false",
           "Whether a streaming group aggregate buffers a batch's updates per key and emits "
           "one change per key instead of one per row."),
    Option("table.exec.state.ttl", DURATION, "0",
           "How long the keyed state of an unwindowed streaming operator (GROUP BY, regular "
           "join, Top-N, deduplication) is kept after its key was last written, in "
           "processing time; expired state is dropped as if never seen (0: never expires).",
           minimum=0),
    Option("table.local-time-zone", TIME_ZONE, "UTC",
           "Zone in which TIMESTAMP_LTZ values are shown and converted (CAST to TIMESTAMP, "
           "STRING or DATE, DATE_FORMAT, FROM_UNIXTIME, UNIX_TIMESTAMP) and in which "
           "CURRENT_DATE and LOCALTIMESTAMP read the clock: an IANA zone such as "
           "'Asia/Shanghai' or a fixed offset such as '+08:00' or 'GMT+08:00'."),
    Option("execution.checkpointing.interval", DURATION, None,
           "Time between the starts of two checkpoints of a streaming job (unset: no "
           "checkpoints).", minimum=1),
    Option("execution.checkpointing.mode", STRING, "exactly_once",
           "EXACTLY_ONCE aligns the barriers of a task's inputs (a snapshot holds exactly "
           "the records before the barrier); AT_LEAST_ONCE does not wait, so a recovery may "
           "replay some records twice.",
           aliases=("execution.checkpointing.consistency-mode",),
           allowed=("exactly_once", "at_least_once")),
    Option("execution.checkpointing.timeout", DURATION, "10 min",
           "A checkpoint not acknowledged by every task within this time is aborted.",
           minimum=1),
    Option("execution.checkpointing.min-pause", DURATION, "0",
           "Least time between the end of one checkpoint and the start of the next.",
           minimum=0),
    Option("execution.checkpointing.max-concurrent-checkpoints", INTEGER, "1",
           "Most checkpoints in progress at once.", minimum=1),
    Option("execution.checkpointing.tolerable-failed-checkpoints", INTEGER, "0",
           "Consecutive failed checkpoints tolerated before the job fails over.", minimum=0),
    Option("execution.checkpointing.num-retained", INTEGER, "1",
           "Completed checkpoints kept; older ones are deleted.",
           aliases=("state.checkpoints.num-retained",), minimum=1),
    Option("execution.checkpointing.dir", STRING, None,
           "Where checkpoints are written: a local path, file:// or s3:// URI (unset with "
           "checkpointing on: a directory under the system's temporary directory).",
           aliases=("state.checkpoints.dir", "execution.checkpointing.checkpoints-dir")),
    Option("execution.checkpointing.incremental", BOOLEAN, "false",
           "With the rocksdb state backend, a checkpoint uploads only the SST files the "
           "previous ones did not and references those.",
           aliases=("state.backend.incremental",)),
    Option("execution.source.wal.enabled", BOOLEAN, "true",
           "Sources that cannot rewind (socket) write what they receive to a write-ahead "
           "log under the checkpoint directory before passing it on, and a restore replays "
           "it: on by default when checkpointing is on (without checkpointing no log is "
           "written and nothing is guaranteed)."),
    Option("state.backend.type", STRING, "hashmap",
           "Where operator state lives: in memory as Arrow tables (hashmap) or in RocksDB on "
           "local disk (rocksdb).", aliases=("state.backend",),
           allowed=("hashmap", "rocksdb")),
    Option("state.backend.rocksdb.localdir", STRING, None,
           "Local directory for the RocksDB instances of the rocksdb state backend (unset: "
           "the system's temporary directory)."),
    Option("execution.savepoint.path", STRING, None,
           "A completed checkpoint (<checkpoint dir>/<job id>/chk-N) or savepoint directory "
           "the next streaming INSERT restores its state and source positions from."),
    Option("execution.savepoint.ignore-unclaimed-state", BOOLEAN, "false",
           "Start from a savepoint even when it holds state the query no longer has (that "
           "state is dropped); without it such a start is refused with the list of states.",
           aliases=("execution.savepoint.allow-non-restored-state",)),
    Option("execution.checkpointing.savepoint-dir", STRING, None,
           "Where STOP JOB ... WITH SAVEPOINT and job.stop(savepoint=True) write savepoints: "
           "a local path, file:// or s3:// URI.",
           aliases=("state.savepoints.dir",)),
    Option("restart-strategy.type", STRING, None,
           "What a failed streaming job does: none, fixed-delay or exponential-delay (unset: "
           "none without checkpointing, fixed-delay with it).",
           aliases=("restart-strategy",),
           allowed=("none", "off", "disable", "fixed-delay", "fixeddelay",
                    "exponential-delay", "exponentialdelay")),
    Option("restart-strategy.fixed-delay.attempts", INTEGER, None,
           "Restarts the fixed-delay strategy allows (default 1; unlimited when the strategy "
           "is chosen by default because checkpointing is on).", minimum=0),
    Option("restart-strategy.fixed-delay.delay", DURATION, "1 s",
           "Wait before each restart of the fixed-delay strategy.", minimum=0),
    Option("restart-strategy.exponential-delay.initial-backoff", DURATION, "1 s",
           "First wait of the exponential-delay strategy.", minimum=0),
    Option("restart-strategy.exponential-delay.max-backoff", DURATION, "5 min",
           "Longest wait of the exponential-delay strategy.", minimum=0),
    Option("restart-strategy.exponential-delay.backoff-multiplier", NUMBER, "2.0",
           "Factor between two consecutive waits of the exponential-delay strategy."),
    Option("restart-strategy.exponential-delay.reset-backoff-threshold", DURATION, "1 h",
           "Running this long without failure starts the exponential backoff over.",
           minimum=0),
    Option("restart-strategy.exponential-delay.jitter-factor", NUMBER, "0.1",
           "Fraction of each wait added or removed at random."),
    Option("spark.master", STRING, "local[*]",
           "The Spark master URL of the spark engine (a cluster URL sends queries there)."),
    Option("spark.broadcast-rows", INTEGER, "1000000",
           "Largest estimated build side (rows) the spark engine gives a broadcast hint.",
           minimum=0),
)


@dataclass(frozen=True)
class PrefixFamily:
    """Keys starting with ``prefix`` that are not declared one by one: accepted as they
    are (any value) and passed on to the system named in ``description``."""

    prefix: str
    description: str


PREFIX_FAMILIES: tuple[PrefixFamily, ...] = (
    PrefixFamily("spark.", "Passed to the SparkSession of the spark engine as Spark "
                           "configuration (e.g. spark.sql.shuffle.partitions)."),
)

_BY_NAME: dict[str, Option] = {name: option for option in SETTINGS
                               for name in (option.key, *option.aliases)}


def find_setting(key: str) -> Option | None:
    """The declaration of ``key`` (canonical or alias), or None."""
    return _BY_NAME.get(key)


def setting(key: str) -> Option:
    """The declaration of a key the code reads; a KeyError is a programming error."""
    return _BY_NAME[key]


def resolve_setting(key: str) -> str:
    """The canonical key of ``key`` (itself for a prefix family); ConfigError with the
    closest declared key when it is unknown."""
    option = _BY_NAME.get(key)
    if option is not None:
        return option.key
    if any(key.startswith(family.prefix) for family in PREFIX_FAMILIES):
        return key
    raise ConfigError(f"unknown setting '{key}'{did_you_mean(key, _BY_NAME)}")


def validate_setting(key: str, value: str) -> tuple[str, str]:
    """``(canonical key, value to store)`` after checking that ``value`` is valid for
    ``key``; the value is stored as written, except that a choice among allowed words is
    stored as the lower-case word the code compares with."""
    canonical = resolve_setting(key)
    option = _BY_NAME.get(canonical)
    if option is None:
        return canonical, value
    parsed = option.parse(value)
    return canonical, parsed if option.allowed else value


def default_settings() -> dict[str, str]:
    """Every declared key with a default, as raw strings."""
    return {option.key: option.default for option in SETTINGS if option.default is not None}


class SettingValues:
    """Typed reads of a session's raw settings (``dict[str, str]``): the value under the
    key or one of its aliases, else the declared default. A value that does not parse is a
    ConfigError naming the key (settings dicts built in code skip ``SET``'s checks)."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self.raw = raw

    def get(self, key: str) -> Any:
        return setting(key).read(self.raw)

    def integer(self, key: str) -> int:
        return self._typed(key, INTEGER)  # type: ignore[no-any-return]

    def boolean(self, key: str) -> bool:
        return self._typed(key, BOOLEAN)  # type: ignore[no-any-return]

    def string(self, key: str) -> str:
        return self._typed(key, STRING)  # type: ignore[no-any-return]

    def number(self, key: str) -> float:
        return self._typed(key, NUMBER)  # type: ignore[no-any-return]

    def duration_ms(self, key: str) -> int:
        return self._typed(key, DURATION)  # type: ignore[no-any-return]

    def memory_size(self, key: str) -> int:
        return self._typed(key, MEMORY_SIZE, MEMORY_BUDGET)  # type: ignore[no-any-return]

    def names(self, key: str) -> tuple[str, ...]:
        return self._typed(key, NAMES)  # type: ignore[no-any-return]

    def time_zone(self, key: str) -> str:
        return self._typed(key, TIME_ZONE)  # type: ignore[no-any-return]

    def _typed(self, key: str, *kinds: ValueKind) -> Any:
        option = setting(key)
        if option.kind not in kinds:
            raise TypeError(f"setting {key} is declared as {option.kind.name}, read as "
                            f"{' or '.join(kind.name for kind in kinds)}")
        return option.read(self.raw)
