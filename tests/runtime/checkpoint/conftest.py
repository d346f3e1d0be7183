"""Checkpoint storages to test against: a local directory and a local S3 server (moto)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from flowsql.runtime.checkpoint.storage import CheckpointStorage


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """``host:port`` of a moto S3 server started for this module, stopped after it."""
    port = _free_port()
    executable = Path(sys.executable).with_name("moto_server")
    server = subprocess.Popen([str(executable), "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).close()
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the moto S3 server did not start") from None
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture
def s3_filesystem(s3_endpoint: str) -> tuple[pafs.S3FileSystem, str]:
    """An S3 file system on the moto server and a fresh bucket in it."""
    options = {"endpoint_override": s3_endpoint, "scheme": "http", "access_key": "test",
               "secret_key": "test", "region": "us-east-1"}
    bucket = f"checkpoints-{uuid.uuid4().hex[:12]}"
    pafs.S3FileSystem(allow_bucket_creation=True, **options).create_dir(bucket)
    return pafs.S3FileSystem(**options), bucket


@pytest.fixture(params=["local", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> CheckpointStorage:
    """Checkpoint storage of job ``job/1`` on a local directory and on S3."""
    if request.param == "local":
        return CheckpointStorage.from_uri(str(tmp_path / "checkpoints"), "job/1")
    filesystem, bucket = request.getfixturevalue("s3_filesystem")
    return CheckpointStorage.from_uri(f"s3://{bucket}/checkpoints", "job/1", filesystem)
