"""Pure checkpoint bookkeeping, without a disk: paths, listings, the _metadata document,
latest-completed selection, retention and shared-file reference counting."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint import paths
from flowsql.runtime.checkpoint.metadata import (
    FORMAT_VERSION,
    CheckpointMetadata,
    OperatorState,
    StateFileHandle,
    SubtaskState,
)
from flowsql.runtime.checkpoint.paths import CheckpointDirectory, parse_listing
from flowsql.runtime.checkpoint.retention import (
    latest_completed,
    plan_retention,
    shared_files_to_delete,
)

# -- paths ---------------------------------------------------------------------------------

def test_layout_of_state_metadata_and_shared_files():
    assert paths.job_dir("/data/ckpt/", "job-1") == "/data/ckpt/job-1"
    assert paths.job_dir("bucket/prefix", "job-1") == "bucket/prefix/job-1"
    assert paths.job_dir("/", "j") == "/j"
    assert paths.state_file(7, "window_agg-3", 1, "keyed/counts") == \
        "chk-7/window_agg-3/1/keyed%2Fcounts.arrow"
    assert paths.metadata_file(7) == "chk-7/_metadata"
    assert paths.shared_file("sst-00012") == "shared/sst-00012"


@pytest.mark.parametrize("name,safe", [
    ("plain_name-1", "plain_name-1"),
    ("keyed/counts", "keyed%2Fcounts"),
    ("..", "%2E%2E"),
    (".hidden", "%2Ehidden"),
    ("50%", "50%25"),
    ("a b", "a%20b"),
    ("é", "%C3%A9"),
])
def test_file_safe_names(name, safe):
    assert paths.file_safe(name) == safe
    assert paths.from_file_safe(safe) == name


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12))
def test_file_safe_is_injective_reversible_and_stays_in_its_directory(a, b):
    safe = paths.file_safe(a)
    assert paths.from_file_safe(safe) == a
    assert "/" not in safe and safe not in (".", "..") and not safe.startswith(".")
    assert (paths.file_safe(a) == paths.file_safe(b)) == (a == b)


def test_file_safe_refuses_an_empty_name():
    with pytest.raises(ValueError):
        paths.file_safe("")


@pytest.mark.parametrize("name,expected", [
    ("chk-0", 0), ("chk-12", 12), ("chk-03", None), ("chk-", None), ("chk-1a", None),
    ("shared", None), ("chk--1", None), ("xchk-1", None),
])
def test_checkpoint_directory_names(name, expected):
    assert paths.checkpoint_id_of(name) == expected


def test_listing_marks_a_directory_completed_only_by_its_metadata():
    listing = parse_listing([
        "chk-1", "chk-1/_metadata", "chk-1/op/0/keyed%2Fs.arrow",
        "chk-2", "chk-2/op/0/keyed%2Fs.arrow",              # crashed before its metadata
        "chk-3/_metadata.inprogress-ab12",                   # temporary name, not the marker
        "chk-4/op/_metadata",                                # a deeper file named _metadata
        "shared", "shared/sst-1", "chk-05/_metadata", "_metadata",
    ])
    assert listing == (CheckpointDirectory(1, True), CheckpointDirectory(2, False),
                       CheckpointDirectory(3, False), CheckpointDirectory(4, False))


# -- retention -----------------------------------------------------------------------------

def _dirs(completed: list[int], incomplete: list[int]) -> list[CheckpointDirectory]:
    return ([CheckpointDirectory(n, True) for n in completed]
            + [CheckpointDirectory(n, False) for n in incomplete])


def test_latest_completed_ignores_newer_incomplete_directories():
    assert latest_completed(_dirs([1, 3], [4, 5])) == 3
    assert latest_completed(_dirs([], [1, 2])) is None
    assert latest_completed([]) is None


def test_retention_keeps_the_newest_completed_and_running_checkpoints():
    listing = _dirs([1, 2, 4, 6], [3, 5, 7])
    plan = plan_retention(listing, num_retained=2)
    assert plan.retained == (4, 6)
    # 3 and 5 were aborted (older than the newest completed); 7 may still be running
    assert plan.deleted == (1, 2, 3, 5)
    plan = plan_retention(listing, num_retained=1, in_progress=[5])
    assert plan.retained == (6,)
    assert plan.deleted == (1, 2, 3, 4)
    assert plan_retention(listing, num_retained=10).deleted == (3, 5)
    assert plan_retention(_dirs([], [1, 2]), num_retained=1).deleted == ()
    with pytest.raises(ValueError):
        plan_retention(listing, num_retained=0)


def test_shared_file_is_deleted_only_when_no_retained_checkpoint_references_it():
    discarded = [("shared/a", "shared/b"), ("shared/b", "shared/c")]
    retained = [("shared/b", "shared/d")]
    assert shared_files_to_delete(discarded, retained) == {"shared/a", "shared/c"}
    # a running checkpoint already acknowledged a reference to "a"
    assert shared_files_to_delete(discarded, retained, in_use=["shared/a"]) == {"shared/c"}
    # files only retained or running checkpoints know are never candidates
    assert shared_files_to_delete([], retained, in_use=["shared/x"]) == frozenset()


# -- the _metadata document ----------------------------------------------------------------

def _metadata() -> CheckpointMetadata:
    def subtask(index: int, shared: tuple[str, ...] = ()) -> SubtaskState:
        return SubtaskState(index, (StateFileHandle("keyed/s", f"chk-4/agg/{index}/keyed%2Fs.arrow",
                                                    100 + index, 3),), shared)
    source = OperatorState("source", 1, 128, (SubtaskState(
        0, (), (), {"splits": [{"file": "a.csv", "offset": 1024}]}),))
    aggregate = OperatorState("agg", 2, 128, (subtask(0, ("shared/x",)),
                                              subtask(1, ("shared/w", "shared/x"))))
    return CheckpointMetadata("job", 4, 1_000, 1_250, (source, aggregate))


def test_metadata_round_trips_through_json():
    metadata = _metadata()
    document = json.loads(metadata.to_json())
    assert document["format_version"] == FORMAT_VERSION
    assert document["shared_files"] == ["shared/w", "shared/x"]
    assert document["operators"][0]["subtasks"][0]["source_position"] == \
        {"splits": [{"file": "a.csv", "offset": 1024}]}
    assert CheckpointMetadata.from_json(metadata.to_json()) == metadata
    assert metadata.size_bytes == 201
    assert metadata.operator("agg").parallelism == 2


def test_metadata_refuses_other_versions_and_malformed_documents():
    document = json.loads(_metadata().to_json())
    for broken in ({**document, "format_version": FORMAT_VERSION + 1},
                   {k: v for k, v in document.items() if k != "operators"},
                   {**document, "shared_files": ["shared/x"]}):
        with pytest.raises(ExecutionError):
            CheckpointMetadata.from_json(json.dumps(broken).encode())
    with pytest.raises(ExecutionError):
        CheckpointMetadata.from_json(b"{not json")
    with pytest.raises(ExecutionError):   # subtasks must cover the parallelism
        OperatorState("agg", 2, 128, (SubtaskState(0),))
