"""Where a version keeps the runs of rows its content digest combines (format revision 4).

Revision 3 listed every run in ``_metadata.json``: about 2,400 runs (110 KB) at 10M rows,
rewritten by every save. Revision 4 keeps them in ``content-runs.json`` beside the metadata,
which a save links from its parent unchanged, and records in the metadata only how its own
runs differ from that file: a list of splices ``[index, removed, [[rows, digest], ...]]``
(replace ``removed`` runs from ``index`` of the file by those listed). A save of 10 edits
records about 10 runs (under 1 KB). Once the splices outgrow a share of the file (see
:func:`~stable_explore.storage.format.splices.rebase_limit`), the save writes a new file with no splices, so a
chain of saves writes on average a few KB each, and reading the runs stays one file and a short list.

The file is read by :func:`stable_explore.storage.read.small_files.load_content_runs` and written
(or linked) by :func:`stable_explore.storage.write.small_files.content_runs_field`.

Examples
--------
>>> from pathlib import Path
>>> checked_runs([[4, "a" * 32], [5, "b" * 32]], "'content_runs'", Path("_metadata.json"))
[(4, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'), (5, 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb')]
>>> checked_runs([[0, "a"]], "'content_runs'", Path("_metadata.json"))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
stable_explore.errors.CacheCorruptionError: ...content run [0, 'a'] is not [row count, 32 hex digits]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.format.spliced_file import ParentList, SplicedList, SplicedRecord

__all__ = ["RUNS", "RUNS_FILE", "ParentRuns", "RunsRecord", "checked_runs"]

RUNS_FILE = "content-runs.json"

Run = tuple[int, str]
RunsRecord = SplicedRecord[Run]
"""The ``content_runs`` field of revision 4: the runs file, how many runs it holds, and the splices."""
ParentRuns = ParentList[Run]
"""A parent version's runs file, its runs, and its folder (a save links the file from there)."""


def checked_runs(value: Any, where: str, path: str | Path) -> list[Run]:
    """Check and type runs ``[[rows, digest], ...]`` (``where`` names the field, ``path`` the file, for errors)."""
    runs: list[Run] = []
    for run in value if isinstance(value, list) else [value]:
        ok = isinstance(run, list) and len(run) == 2 and type(run[0]) is int and run[0] > 0
        if not ok or not isinstance(run[1], str) or len(run[1]) != 32:
            raise CacheCorruptionError(path, f"{where}: content run {run!r:.100} is not [row count, 32 hex digits]")
        runs.append((run[0], run[1]))
    return runs


RUNS: SplicedList[Run] = SplicedList(RUNS_FILE, "'content_runs'", "runs", checked_runs, list)
"""How the runs file is named and checked."""
