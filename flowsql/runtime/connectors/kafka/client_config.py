"""The Kafka client's configuration from a table's options: every ``properties.<key>`` is
handed to the client (confluent-kafka, i.e. librdkafka) as ``<key>``, as Flink hands them to
the Java client; the few Java-only keys Flink users write are translated or dropped."""

from __future__ import annotations

from typing import Any

PREFIX = "properties."
#: Java client keys with no librdkafka equivalent that are harmless to drop
_JAVA_ONLY = frozenset({"key.deserializer", "value.deserializer", "key.serializer",
                        "value.serializer"})


def client_config(options: dict[str, str], **overrides: Any) -> dict[str, Any]:
    """The client configuration of a table (``properties.*``), with ``overrides`` on top
    (the connector's own settings win: e.g. offsets are never auto-committed)."""
    config: dict[str, Any] = {}
    for key, value in options.items():
        if key.startswith(PREFIX):
            name = key[len(PREFIX):]
            if name not in _JAVA_ONLY:
                config[name] = value
    config.update(overrides)
    return config


def bootstrap_servers(options: dict[str, str]) -> str:
    return options[f"{PREFIX}bootstrap.servers"]
