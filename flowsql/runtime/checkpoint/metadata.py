"""The ``_metadata`` document: what a completed checkpoint consists of.

Written by the coordinator once every subtask acknowledged, *after* every state file it
names exists, and as the last file of the checkpoint (its presence is the commit marker).
It is JSON, never serialized Python objects: a checkpoint is data, not code. Layout
(``format_version`` 1)::

    {"format_version": 1, "job_id": "...", "checkpoint_id": 7, "kind": "checkpoint",
     "timestamp_ms": <trigger time>, "completed_ms": <all acknowledged>,
     "shared_files": ["shared/..."],                 # union over all subtasks, sorted
     "operators": [{"operator_id": "...", "parallelism": 2, "max_parallelism": 128,
                    "subtasks": [{"subtask": 0,
                                  "files": [{"state": "keyed/counts",
                                             "path": "chk-7/.../keyed%2Fcounts.arrow",
                                             "size_bytes": 1234, "rows": 10}],
                                  "shared_files": [],
                                  "source_position": {...} | null}]}]}

Contract: ``CheckpointMetadata.from_json(m.to_json()) == m``; reading refuses another
format version, a malformed document and a document whose top-level ``shared_files`` is
not the union of its subtasks' (a truncated or hand-edited file), with ``ExecutionError``.
Paths are relative to the job directory (``paths``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flowsql.errors import ExecutionError

#: bumped when the document changes incompatibly
FORMAT_VERSION = 1


@dataclass(frozen=True)
class StateFileHandle:
    """One uploaded state table: its state name, its file and what it holds."""

    state: str
    path: str
    size_bytes: int
    rows: int


@dataclass(frozen=True)
class SubtaskState:
    """What one subtask of one operator acknowledged: its state files, the shared files it
    references, and (for a source) the position to replay from, as a JSON object."""

    subtask: int
    files: tuple[StateFileHandle, ...] = ()
    shared_files: tuple[str, ...] = ()
    source_position: Mapping[str, Any] | None = field(default=None, hash=False)

    @property
    def size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of this state (in ``_metadata`` and in acknowledgements)."""
        return {"subtask": self.subtask,
                "files": [{"state": f.state, "path": f.path, "size_bytes": f.size_bytes,
                           "rows": f.rows} for f in self.files],
                "shared_files": list(self.shared_files),
                "source_position": (None if self.source_position is None
                                    else dict(self.source_position))}

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> SubtaskState:
        """Inverse of ``to_dict``; a malformed object raises KeyError/TypeError/ValueError."""
        return cls(subtask=int(document["subtask"]),
                   files=tuple(StateFileHandle(str(f["state"]), str(f["path"]),
                                               int(f["size_bytes"]), int(f["rows"]))
                               for f in document["files"]),
                   shared_files=tuple(str(n) for n in document["shared_files"]),
                   source_position=document["source_position"])


@dataclass(frozen=True)
class OperatorState:
    """All subtasks of one operator, addressed by its stable operator id. ``parallelism`` and
    ``max_parallelism`` are those the snapshot was taken with; a rescaled restore needs both."""

    operator_id: str
    parallelism: int
    max_parallelism: int
    subtasks: tuple[SubtaskState, ...]

    def __post_init__(self) -> None:
        indexes = sorted(s.subtask for s in self.subtasks)
        if indexes != list(range(self.parallelism)):
            raise ExecutionError(
                f"operator '{self.operator_id}': subtasks {indexes} do not cover parallelism "
                f"{self.parallelism}")


@dataclass(frozen=True)
class CheckpointMetadata:
    """One completed checkpoint (or savepoint)."""

    job_id: str
    checkpoint_id: int
    timestamp_ms: int
    completed_ms: int
    operators: tuple[OperatorState, ...]
    kind: str = "checkpoint"

    @property
    def shared_files(self) -> tuple[str, ...]:
        """Every shared file any subtask references, sorted."""
        return tuple(sorted({name for op in self.operators for s in op.subtasks
                             for name in s.shared_files}))

    @property
    def size_bytes(self) -> int:
        return sum(s.size_bytes for op in self.operators for s in op.subtasks)

    def operator(self, operator_id: str) -> OperatorState:
        for op in self.operators:
            if op.operator_id == operator_id:
                return op
        raise ExecutionError(f"checkpoint {self.checkpoint_id} holds no operator "
                             f"'{operator_id}'")

    def to_json(self) -> bytes:
        document = {
            "format_version": FORMAT_VERSION, "job_id": self.job_id,
            "checkpoint_id": self.checkpoint_id, "kind": self.kind,
            "timestamp_ms": self.timestamp_ms, "completed_ms": self.completed_ms,
            "shared_files": list(self.shared_files),
            "operators": [{
                "operator_id": op.operator_id, "parallelism": op.parallelism,
                "max_parallelism": op.max_parallelism,
                "subtasks": [s.to_dict() for s in op.subtasks],
            } for op in self.operators],
        }
        return json.dumps(document, indent=1, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> CheckpointMetadata:
        try:
            document = json.loads(data)
            version = document.get("format_version")
            if version != FORMAT_VERSION:
                raise ExecutionError(f"checkpoint metadata has format version {version}, "
                                     f"this reader understands {FORMAT_VERSION}")
            metadata = cls(
                job_id=str(document["job_id"]),
                checkpoint_id=int(document["checkpoint_id"]),
                timestamp_ms=int(document["timestamp_ms"]),
                completed_ms=int(document["completed_ms"]),
                kind=str(document["kind"]),
                operators=tuple(OperatorState(
                    operator_id=str(op["operator_id"]), parallelism=int(op["parallelism"]),
                    max_parallelism=int(op["max_parallelism"]),
                    subtasks=tuple(SubtaskState.from_dict(s) for s in op["subtasks"]),
                ) for op in document["operators"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ExecutionError(f"malformed checkpoint metadata: {error!r}") from error
        if list(metadata.shared_files) != document["shared_files"]:
            raise ExecutionError("checkpoint metadata lists shared files its subtasks do not "
                                 "reference (or misses some)")
        return metadata
