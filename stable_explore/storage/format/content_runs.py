"""Where a version keeps the runs of rows its content digest combines (format revision 4).

Revision 3 listed every run in ``_metadata.json``: about 2,400 runs (110 KB) at 10M rows,
rewritten by every save. Revision 4 keeps them in ``content-runs.json`` beside the metadata,
which a save links from its parent unchanged, and records in the metadata only how its own
runs differ from that file: a list of splices ``[index, removed, [[rows, digest], ...]]``
(replace ``removed`` runs from ``index`` of the file by those listed). A save of 10 edits
records about 10 runs (under 1 KB). Once the splices outgrow a share of the file (see
:func:`~stable_explore.storage.format.splices.rebase_limit`), the save writes a new file with no splices, so a
chain of saves writes on average a few KB each, and reading the runs stays one file and a short list.

Examples
--------
>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> field = content_runs_field(folder, [(4, "a" * 32), (5, "b" * 32)])
>>> field["file"], field["runs"], field["splices"]
('content-runs.json', 2, [])
>>> load_content_runs(folder, field, folder / "_metadata.json")[0]
[(4, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'), (5, 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb')]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.format.spliced_file import ParentList, SplicedList, SplicedRecord

if TYPE_CHECKING:
    from stable_explore.storage.format.remote_location import RemoteLocation

__all__ = ["RUNS", "RUNS_FILE", "ParentRuns", "RunsRecord", "content_runs_field", "load_content_runs"]

RUNS_FILE = "content-runs.json"

Run = tuple[int, str]
RunsRecord = SplicedRecord[Run]
"""The ``content_runs`` field of revision 4: the runs file, how many runs it holds, and the splices."""
ParentRuns = ParentList[Run]
"""A parent version's runs file, its runs, and its folder (a save links the file from there)."""


def _checked_runs(value: Any, where: str, path: str | Path) -> list[Run]:
    runs: list[Run] = []
    for run in value if isinstance(value, list) else [value]:
        ok = isinstance(run, list) and len(run) == 2 and type(run[0]) is int and run[0] > 0
        if not ok or not isinstance(run[1], str) or len(run[1]) != 32:
            raise CacheCorruptionError(path, f"{where}: content run {run!r:.100} is not [row count, 32 hex digits]")
        runs.append((run[0], run[1]))
    return runs


RUNS: SplicedList[Run] = SplicedList(RUNS_FILE, "'content_runs'", "runs", _checked_runs, list)
"""How the runs file is named and checked."""


def load_content_runs(
    directory: Path, raw: Any, meta_path: Path, remote: RemoteLocation | None = None
) -> tuple[list[Run], ParentRuns | None]:
    """The runs a ``content_runs`` field gives: inline (revision 3), or a file and splices (revision 4).

    The second value describes the file for a save to reuse (None for inline runs).
    """
    if isinstance(raw, list):
        return _checked_runs(raw, "'content_runs'", meta_path), None
    return RUNS.load(directory, raw, meta_path, remote)


def content_runs_field(out_dir: Path, runs: Sequence[Run], parent: ParentRuns | None = None) -> dict[str, Any]:
    """Record ``runs`` for a version being written in ``out_dir``: the ``content_runs`` field to store.

    With ``parent``, the parent's runs file is linked and only the splices are recorded, while
    they stay under :func:`~stable_explore.storage.format.splices.rebase_limit`; otherwise a new runs file is written.
    """
    return RUNS.field_value(out_dir, runs, parent)
