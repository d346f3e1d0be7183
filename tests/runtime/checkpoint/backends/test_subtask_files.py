"""Files a backend puts into a subtask's checkpoint directory besides its state files."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowsql.runtime.checkpoint import paths
from flowsql.runtime.checkpoint.storage import CheckpointStorage


def test_subtask_files_sit_beside_state_files_and_never_collide_with_them():
    assert paths.subtask_file(7, "op/x", 2, "MANIFEST-000005") == \
        "chk-7/op%2Fx/2/MANIFEST-000005"
    assert paths.subtask_file(7, "op", 0, "000012.sst") == "chk-7/op/0/000012%2Esst"
    # a file named like a state file is escaped, so it cannot replace one
    assert paths.subtask_file(1, "op", 0, "keyed.arrow") != \
        paths.state_file(1, "op", 0, "keyed")
    assert paths.subtask_file(1, "op", 0, "..") == "chk-1/op/0/%2E%2E"
    with pytest.raises(ValueError):
        paths.subtask_file(1, "op", -1, "CURRENT")


def test_upload_and_download_copy_files_through_the_storage(tmp_path: Path):
    storage = CheckpointStorage.from_uri(str(tmp_path / "checkpoints"), "job")
    source = tmp_path / "local.bin"
    content = bytes(range(256)) * 9_000    # more than one copy chunk
    source.write_bytes(content)
    relative, size = storage.upload_private(3, "op", 1, "000009.sst", str(source))
    assert (relative, size) == ("chk-3/op/1/000009%2Esst", len(content))
    shared = storage.upload_shared("abc-000009.sst", str(source))
    assert shared == "shared/abc-000009%2Esst"
    source.write_bytes(b"other")    # a shared file of an existing name is kept
    assert storage.upload_shared("abc-000009.sst", str(source)) == shared
    for path in (relative, shared):
        target = tmp_path / "copy"
        storage.download(path, str(target))
        assert target.read_bytes() == content
