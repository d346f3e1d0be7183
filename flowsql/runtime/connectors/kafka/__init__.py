"""Flink SQL's ``kafka`` and ``upsert-kafka`` connectors: payload formats, source, sinks."""
