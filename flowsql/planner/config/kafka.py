"""The ``kafka`` and ``upsert-kafka`` connectors, declared with Flink SQL's option names, so
Flink DDL for Kafka runs unchanged.

What the options do is implemented in ``flowsql.runtime.connectors.kafka``; this module only
says which keys exist, their types, defaults and allowed values. Any ``properties.<key>``
is handed to the Kafka client (librdkafka's configuration keys, which are Kafka's).
"""

from __future__ import annotations

from flowsql.planner.config.connector_model import Connector, Format, MetadataKey
from flowsql.planner.config.values import BOOLEAN, CHARACTER, DURATION, INTEGER, STRING, Option

STARTUP_MODES = ("earliest-offset", "latest-offset", "group-offsets", "timestamp",
                 "specific-offsets")
BOUNDED_MODES = ("unbounded", "latest-offset", "group-offsets", "timestamp",
                 "specific-offsets")
DELIVERY_GUARANTEES = ("none", "at-least-once", "exactly-once")

_JSON = Format("json", "One JSON object per message, one key per column.", (
    Option("json.ignore-parse-errors", BOOLEAN, "false",
           "Skip (and count) a message that does not parse instead of failing."),
    Option("json.fail-on-missing-field", BOOLEAN, "false",
           "Fail on a message that lacks a column's key (else the column is NULL)."),
))
_CSV = Format("csv", "One CSV record per message.", (
    Option("csv.field-delimiter", CHARACTER, ",", "The field separator."),
    Option("csv.null-literal", STRING, None, "The text of NULL in every column."),
    Option("csv.quote-character", CHARACTER, '"', "The character quoting fields."),
    Option("csv.disable-quote-character", BOOLEAN, "false", "Fields are never quoted."),
    Option("csv.escape-character", CHARACTER, None,
           "The character escaping the next one (unset: none)."),
    Option("csv.ignore-parse-errors", BOOLEAN, "false",
           "Skip (and count) a message that does not parse instead of failing."),
))
_RAW = Format("raw", "The message bytes as the value of the one STRING or BYTES column.", (
    Option("raw.charset", STRING, "UTF-8", "The character set of a STRING column."),
))
_DEBEZIUM = Format(
    "debezium-json",
    "Debezium change events as JSON: a changelog (+I, -U/+U, -D) from op, before and "
    "after.", (
        Option("debezium-json.schema-include", BOOLEAN, "false",
               "Events carry Debezium's schema envelope ({\"schema\", \"payload\"})."),
        Option("debezium-json.ignore-parse-errors", BOOLEAN, "false",
               "Skip (and count) a message that does not parse instead of failing."),
    ))
_AVRO = Format("avro", "Schemaless Avro binary with the schema derived from the columns, "
               "as Flink's avro format.")
FORMATS = (_JSON, _CSV, _RAW, _DEBEZIUM, _AVRO)
FORMAT_NAMES = tuple(f.name for f in FORMATS)

_CLIENT = Option("properties.bootstrap.servers", STRING, None,
                 "Comma-separated host:port list of Kafka brokers.", required=True)
_GROUP = Option("properties.group.id", STRING, None,
                "Consumer group: where group-offsets start and where offsets are committed "
                "when a checkpoint completes (for monitoring only).")
_TOPIC = Option("topic", STRING, None,
                "Topic name, or several separated by ';' (sources); the sink's topic.")
_KEY_FORMAT = Option("key.format", STRING, None, "Format of the message key.",
                     allowed=FORMAT_NAMES)
_KEY_FIELDS = Option("key.fields", STRING, None,
                     "Columns that make the key, separated by ';' (in key order).")
_KEY_PREFIX = Option("key.fields-prefix", STRING, None,
                     "Prefix of key columns' names that the key format does not see "
                     "(needs 'value.fields-include' = 'EXCEPT_KEY').")
_VALUE_FORMAT = Option("value.format", STRING, None, "Format of the message value "
                       "(same as 'format').", allowed=FORMAT_NAMES)
_VALUE_INCLUDE = Option("value.fields-include", STRING, "ALL",
                        "Whether key columns are also in the value.",
                        allowed=("all", "except_key"))
_DELIVERY = Option("sink.delivery-guarantee", STRING, "at-least-once",
                   "none: fire and forget; at-least-once: flushed at every checkpoint; "
                   "exactly-once: a Kafka transaction per checkpoint, committed when it "
                   "completes.", allowed=DELIVERY_GUARANTEES)
_TXN_PREFIX = Option("sink.transactional-id-prefix", STRING, None,
                     "Prefix of the sink's transactional ids (required for exactly-once; "
                     "unique per job writing to the cluster).")
_CLIENT_PREFIX = (("properties.", "any Kafka client setting, passed to the client"),)

METADATA = (
    MetadataKey("topic", "STRING NOT NULL", True,
                "Topic of the record (the sink writes to it when 'topic' is not set)."),
    MetadataKey("partition", "INT NOT NULL", False, "Partition of the record."),
    MetadataKey("headers", "MAP<STRING, BYTES> NOT NULL", True, "Headers of the record."),
    MetadataKey("leader-epoch", "INT NULL", False, "Leader epoch of the record, if known."),
    MetadataKey("offset", "BIGINT NOT NULL", False, "Offset of the record in its partition."),
    MetadataKey("timestamp", "TIMESTAMP_LTZ(3) NOT NULL", True, "Timestamp of the record."),
    MetadataKey("timestamp-type", "STRING NOT NULL", False,
                "NoTimestampType, CreateTime or LogAppendTime."),
)

KAFKA = Connector(
    "kafka",
    "Kafka topics: an unbounded source (bounded with 'scan.bounded.mode') whose partition "
    "offsets are checkpointed, and an append-only sink with none, at-least-once or "
    "exactly-once delivery.",
    source=True, sink=True,
    options=(
        _TOPIC,
        Option("topic-pattern", STRING, None,
               "Regular expression of topic names to read (instead of 'topic'); new matching "
               "topics are picked up by partition discovery."),
        _CLIENT, _GROUP,
        Option("format", STRING, None, "Format of the message value.", allowed=FORMAT_NAMES),
        _VALUE_FORMAT, _KEY_FORMAT, _KEY_FIELDS, _KEY_PREFIX, _VALUE_INCLUDE,
        Option("scan.startup.mode", STRING, "group-offsets",
               "Where reading starts when no checkpoint is restored: the group's committed "
               "offsets (else 'properties.auto.offset.reset'), the earliest or latest "
               "offset, the first record at a timestamp, or given offsets.",
               allowed=STARTUP_MODES),
        Option("scan.startup.specific-offsets", STRING, None,
               "For specific-offsets: 'partition:0,offset:42;partition:1,offset:300'."),
        Option("scan.startup.timestamp-millis", INTEGER, None,
               "For timestamp: epoch milliseconds."),
        Option("scan.bounded.mode", STRING, "unbounded",
               "Where reading ends: never, or at the offsets of the same choices as the "
               "start (latest-offset: the end when the job starts).", allowed=BOUNDED_MODES),
        Option("scan.bounded.specific-offsets", STRING, None,
               "For specific-offsets: 'partition:0,offset:42;...' (exclusive ends)."),
        Option("scan.bounded.timestamp-millis", INTEGER, None,
               "For timestamp: the first record at or after it is not read."),
        Option("scan.topic-partition-discovery.interval", DURATION, "5 min",
               "How often the topics (of 'topic-pattern') and partitions are listed again "
               "while the job runs; 0 turns discovery off."),
        Option("sink.partitioner", STRING, "default",
               "default: by the key's hash when there is a key, else spread; fixed: sink "
               "subtask i writes partition i mod n; round-robin: rows in turn.",
               allowed=("default", "fixed", "round-robin")),
        _DELIVERY, _TXN_PREFIX,
    ),
    formats=FORMATS, format_option="format", needs_columns=True,
    option_prefixes=_CLIENT_PREFIX, bounded_with="scan.bounded.mode",
    changelog_formats=("debezium-json",), key_value_formats=True, metadata=METADATA,
    split_watermarks=True)

UPSERT_KAFKA = Connector(
    "upsert-kafka",
    "A Kafka topic as a table keyed by its PRIMARY KEY: read as a changelog (the last value "
    "per key wins, a tombstone deletes), written from an updating result (the latest row "
    "per key, a tombstone for a delete).",
    source=True, sink=True,
    options=(
        Option("topic", STRING, None, "The topic.", required=True),
        _CLIENT, _GROUP,
        Option("key.format", STRING, None, "Format of the key (the primary key columns).",
               allowed=FORMAT_NAMES, required=True),
        Option("value.format", STRING, None, "Format of the value.", allowed=FORMAT_NAMES,
               required=True),
        _KEY_PREFIX, _VALUE_INCLUDE,
        Option("sink.buffer-flush.max-rows", INTEGER, "0",
               "Rows buffered (the last change per key kept) before a write; 0: no buffer.",
               minimum=0),
        Option("sink.buffer-flush.interval", DURATION, "0 s",
               "Longest time a buffered change waits."),
        _DELIVERY, _TXN_PREFIX,
    ),
    formats=FORMATS, format_option="value.format", needs_columns=True,
    option_prefixes=_CLIENT_PREFIX, updating_source=True, sink_accepts_updates=True,
    needs_primary_key=True, key_value_formats=True, metadata=METADATA,
    split_watermarks=True)
