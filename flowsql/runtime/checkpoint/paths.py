"""Where the files of a checkpoint live, and which checkpoints a directory listing holds.

The layout under a checkpoint directory ``<dir>`` (a local path or the path part of a
``pyarrow.fs`` URI, always with ``/`` separators)::

    <dir>/<job id>/chk-<n>/_metadata                                   commit marker, last
    <dir>/<job id>/chk-<n>/<operator id>/<subtask>/<state name>.arrow  Arrow IPC state files
    <dir>/<job id>/chk-<n>/<operator id>/<subtask>/<file name>         other subtask files
    <dir>/<job id>/shared/<file>                                       files several
                                                                       checkpoints reference

A savepoint lives elsewhere, under the savepoint directory ``<savepoints>``, and holds
everything it needs (no ``shared`` files)::

    <savepoints>/savepoint-<short job id>-<random>/_metadata
    <savepoints>/savepoint-<short job id>-<random>/<operator id>/<subtask>/<state name>.arrow

Contract:

* every path is built here and nowhere else, from values only (no I/O);
* job ids, operator ids and state names are made file-safe by ``file_safe``, which is
  injective and reversible (``from_file_safe``), so two different names never share a file
  and a name such as ``keyed/counts`` or ``..`` never escapes its directory;
* the ``_metadata`` document records state files *relative to the job directory*
  (``chk-<n>/...`` or ``shared/...``), so a job directory can be copied or moved as a whole;
  a savepoint's are relative to the savepoint's own directory, so it can be moved alone;
* a ``chk-<n>`` directory is a *completed* checkpoint exactly when it holds a file named
  ``_metadata``: the metadata is written last, so its presence means every file it names
  was written before (``parse_listing``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

METADATA_FILE = "_metadata"
SHARED_DIR = "shared"
STATE_SUFFIX = ".arrow"
CHECKPOINT_PREFIX = "chk-"
SAVEPOINT_PREFIX = "savepoint-"
#: characters of the job id a savepoint's directory name carries (Flink's carries six)
SHORT_JOB_ID = 6
# canonical decimal only: "chk-03" would alias "chk-3", so it is not a checkpoint directory
_CHECKPOINT_NAME = re.compile(r"chk-(0|[1-9][0-9]*)")
_SAFE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def file_safe(name: str) -> str:
    """``name`` with every character outside ``[A-Za-z0-9_-]`` written as ``%XX`` per UTF-8
    byte. Injective (``%`` itself is escaped), never empty, never ``.`` or ``..``."""
    if not name:
        raise ValueError("an empty name cannot name a checkpoint file")
    return "".join(ch if ch in _SAFE_CHARS else "".join(f"%{b:02X}" for b in ch.encode())
                   for ch in name)


def from_file_safe(text: str) -> str:
    """Inverse of ``file_safe``."""
    raw = bytearray()
    index = 0
    while index < len(text):
        if text[index] == "%":
            raw.append(int(text[index + 1:index + 3], 16))
            index += 3
        else:
            raw.extend(text[index].encode())
            index += 1
    return raw.decode()


def join(*parts: str) -> str:
    """Parts joined with ``/``; a trailing ``/`` of the first (the base directory) is dropped,
    so ``join("/", "a")`` is ``/a``."""
    return "/".join([parts[0].rstrip("/"), *parts[1:]])


def job_dir(base: str, job_id: str) -> str:
    return join(base, file_safe(job_id))


def checkpoint_dir_name(checkpoint_id: int) -> str:
    if checkpoint_id < 0:
        raise ValueError(f"checkpoint ids are not negative, got {checkpoint_id}")
    return f"{CHECKPOINT_PREFIX}{checkpoint_id}"


def checkpoint_id_of(name: str) -> int | None:
    """The id of a ``chk-<n>`` directory name; None for any other name."""
    match = _CHECKPOINT_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def state_file(checkpoint_id: int, operator_id: str, subtask: int, state_name: str) -> str:
    """The state file of one state of one subtask, relative to the job directory."""
    if subtask < 0:
        raise ValueError(f"subtask indexes are not negative, got {subtask}")
    return "/".join((checkpoint_dir_name(checkpoint_id), file_safe(operator_id), str(subtask),
                     file_safe(state_name) + STATE_SUFFIX))


def subtask_file(checkpoint_id: int, operator_id: str, subtask: int, file_name: str) -> str:
    """Any other file one subtask writes into a checkpoint (e.g. a RocksDB checkpoint's
    ``MANIFEST-000005``), relative to the job directory. It never collides with a state file:
    the ``.`` of ``.arrow`` is literal there, while ``file_safe`` escapes every ``.`` here."""
    if subtask < 0:
        raise ValueError(f"subtask indexes are not negative, got {subtask}")
    return "/".join((checkpoint_dir_name(checkpoint_id), file_safe(operator_id), str(subtask),
                     file_safe(file_name)))


def metadata_file(checkpoint_id: int) -> str:
    """The commit marker of a checkpoint, relative to the job directory."""
    return f"{checkpoint_dir_name(checkpoint_id)}/{METADATA_FILE}"


def shared_file(name: str) -> str:
    """A file in the shared directory, relative to the job directory."""
    return f"{SHARED_DIR}/{file_safe(name)}"


def savepoint_dir_name(job_id: str, random_hex: str) -> str:
    """``savepoint-<short job id>-<random>``: the short job id is the end of the file-safe
    job id (its random part), so savepoints of one job sort together."""
    if not random_hex:
        raise ValueError("a savepoint directory name needs a random part")
    return f"{SAVEPOINT_PREFIX}{file_safe(job_id)[-SHORT_JOB_ID:]}-{file_safe(random_hex)}"


def savepoint_state_file(operator_id: str, subtask: int, state_name: str) -> str:
    """The state file of one state of one subtask, relative to the savepoint directory."""
    if subtask < 0:
        raise ValueError(f"subtask indexes are not negative, got {subtask}")
    return "/".join((file_safe(operator_id), str(subtask), file_safe(state_name) + STATE_SUFFIX))


def parent(path: str) -> tuple[str, str]:
    """``path`` (``/`` separators, no trailing ``/``) split into its directory and its last
    name; ``/a`` gives ``("/", "a")``."""
    head, _, name = path.rstrip("/").rpartition("/")
    return head or "/", name


@dataclass(frozen=True, slots=True)
class CheckpointDirectory:
    """One ``chk-<n>`` directory found in a listing."""

    checkpoint_id: int
    completed: bool


def parse_listing(entries: Iterable[str]) -> tuple[CheckpointDirectory, ...]:
    """The checkpoint directories named by ``entries`` (paths relative to the job directory,
    directories and files alike, at any depth), ordered by id. A directory is completed
    when ``chk-<n>/_metadata`` is among the entries; names that are not canonical
    ``chk-<n>`` (the shared directory, temporary files, ``chk-03``) are ignored."""
    seen: dict[int, bool] = {}
    for entry in entries:
        parts = entry.strip("/").split("/")
        checkpoint_id = checkpoint_id_of(parts[0])
        if checkpoint_id is None:
            continue
        completed = len(parts) == 2 and parts[1] == METADATA_FILE
        seen[checkpoint_id] = seen.get(checkpoint_id, False) or completed
    return tuple(CheckpointDirectory(n, seen[n]) for n in sorted(seen))
