"""Where an export may write: the one check every export (methods, ``se.export``, the command line) goes through.

An export that writes a folder (MDS, Lance, stable-datasets' layouts) writes into a new or empty
folder, or replaces a folder that an export wrote before (it holds :data:`EXPORT_MARKER`, a small
JSON file saying what wrote it) when asked to (``overwrite=True``). It never writes into, over or
above a catalog home, a dataset's folder or a version's folder: the default home, the dataset's
own home, and any folder that looks like one (``_metadata.json``, ``refs/`` beside ``versions/``,
``NAME/refs/`` beside ``NAME/versions/`` below it). A single-file export (Parquet, CSV) is refused
inside such a folder too, and replaces its file only when the new one is complete.

Examples
--------
>>> import tempfile, pathlib
>>> from stable_explore.errors import ExportTargetError
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> export_folder(out / "new-folder", layout="mds") == out / "new-folder"
True
>>> (out / "notes.txt").write_text("mine")
4
>>> try:
...     export_folder(out, layout="mds")
... except ExportTargetError as exc:
...     print("refused")
refused
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore.catalog.names import HOME_ENV, resolve_home
from stable_explore.errors import ExportTargetError
from stable_explore.storage.format.cache_meta import METADATA_FILE

if TYPE_CHECKING:
    from stable_explore.dataset._members import DatasetMembers

__all__ = ["EXPORT_MARKER", "export_file", "export_folder", "is_own_export", "write_export_marker"]

EXPORT_MARKER = ".stable-explore-export"
"""The file an export leaves in the folder it wrote: JSON naming stable-explore, the layout and the version."""
_WRITER = "stable-explore"


def is_own_export(folder: Path) -> bool:
    """Whether ``folder`` holds the marker an export writes (so an export may replace it)."""
    try:
        marker = json.loads((folder / EXPORT_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("written_by") == _WRITER


def write_export_marker(folder: Path, *, layout: str, ds: DatasetMembers | None = None) -> None:
    """Leave the marker in ``folder`` (the export's temp folder, before it is published)."""
    marker: dict[str, object] = {"written_by": _WRITER, "layout": layout}
    if ds is not None:
        marker.update(dataset=ds.name, version=ds.version)
    (folder / EXPORT_MARKER).write_text(json.dumps(marker, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _homes(ds: DatasetMembers | None) -> list[Path]:
    """The homes an export must stay out of: the default home and the dataset's own (resolved)."""
    homes: list[Path] = []
    env = os.environ.get(HOME_ENV, "")
    if "://" not in env:
        homes.append(resolve_home())
    if ds is not None:
        if isinstance(ds.home, Path):
            homes.append(ds.home)
        cache_dir = ds.cache_dir
        homes.append(cache_dir)
        if cache_dir.parent.name == "versions":  # a version of a catalog (or a bucket's local mirror)
            homes.append(cache_dir.parents[2])
    return [_resolved(home) for home in homes]


def _resolved(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError):  # a symlink loop: compare it as written
        return path.expanduser().absolute()


def _store_kind(folder: Path) -> str | None:
    """What catalog folder ``folder`` looks like (a version, a dataset, a home), or None."""
    try:
        if (folder / METADATA_FILE).is_file():
            return "a version's (or a cache's) folder: it holds _metadata.json"
        if (folder / "refs").is_dir() and (folder / "versions").is_dir():
            return "a dataset's folder: it holds refs/ and versions/"
        if folder.name == "versions" and (folder.parent / "refs").is_dir():
            return "a dataset's versions/ folder"
        if folder.name == "refs" and (folder.parent / "versions").is_dir():
            return "a dataset's refs/ folder"
        for child in folder.glob("*/refs"):  # a dataset always has refs/ (a scratch copy of a version has not)
            if (child.parent / "versions").is_dir():
                return f"a catalog home: it holds the dataset {child.parent.name!r}"
    except OSError:
        return None
    return None


def _refusal(path: Path, why: str, *, fix: str) -> ExportTargetError:
    return ExportTargetError(f"refusing to export to {path}: {why}; nothing was written. {fix}")


def _check_outside_homes(path: Path, resolved: Path, ds: DatasetMembers | None, fix: str) -> None:
    for home in _homes(ds):
        if resolved == home or resolved.is_relative_to(home):
            why = f"it is inside the catalog home (or version folder) {home}, where only stable-explore writes"
            raise _refusal(path, why, fix=fix)
        if home.is_relative_to(resolved):
            why = f"it holds the catalog home (or version folder) {home}: replacing it would delete its datasets"
            raise _refusal(path, why, fix=fix)
    for folder in (resolved, *resolved.parents):
        kind = _store_kind(folder)
        if kind is not None and not (folder == resolved and is_own_export(folder)):
            where = "it is" if folder == resolved else f"it is inside {folder}, which is"
            raise _refusal(path, f"{where} {kind}", fix=fix)


def _named(path: str | Path, what: str) -> tuple[Path, Path]:
    """``path`` as given and resolved; refuses a path with no name of its own ('', '.', '..', '/')."""
    given = Path(os.fspath(path)).expanduser()
    text = os.fspath(path)
    if text.strip() == "" or given.name in ("", ".", "..") or Path(text).name in ("", ".", ".."):
        msg = (
            f"refusing to export to {text!r}: {what} needs a path of its own (a new folder or file), and {text!r} "
            "names the current folder, its parent or the root; give one such as 'exports/pets-mds'"
        )
        raise ExportTargetError(msg)
    return given, _resolved(given)


def export_folder(
    path: str | Path,
    *,
    layout: str,
    ds: DatasetMembers | None = None,
    overwrite: bool = False,
    overwrite_option: str = "overwrite=True",
) -> Path:
    """Check ``path`` as the folder an export of ``layout`` writes; the path to write (as given).

    Refused: a path with no name ('', '.', '/'); a path inside, equal to or holding a catalog home or a
    version's folder; an existing file; a non-empty folder that no export wrote; a folder an export wrote,
    unless ``overwrite`` (``overwrite_option`` is how the caller spells it, for the message).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> (out / "mds").mkdir()
    >>> write_export_marker(out / "mds", layout="mds")
    >>> export_folder(out / "mds", layout="mds", overwrite=True) == out / "mds"
    True
    >>> export_folder(".", layout="mds")
    Traceback (most recent call last):
    ...
    stable_explore.errors.ExportTargetError: refusing to export to '.': a mds export needs a path of its own ...
    """
    fix = "Export to a new folder outside every catalog home (e.g. ./exports/NAME)."
    given, resolved = _named(path, f"a {layout} export")
    _check_outside_homes(given, resolved, ds, fix)
    if resolved.is_file() or (resolved.exists() and not resolved.is_dir()):
        raise _refusal(given, f"it is a file, and a {layout} export writes a folder", fix=fix)
    if not resolved.is_dir():
        return given
    try:
        entries = [entry.name for entry in resolved.iterdir()]
    except OSError as exc:
        raise _refusal(given, f"its folder cannot be listed ({exc.strerror or exc})", fix=fix) from exc
    if not entries:
        return given
    if not is_own_export(resolved):
        shown = ", ".join(sorted(entries)[:5]) + (", ..." if len(entries) > 5 else "")
        why = f"the folder is not empty ({len(entries)} entries: {shown}) and no stable-explore export wrote it"
        raise _refusal(given, why, fix="Export to a new or empty folder, or move what is there first.")
    if not overwrite:
        why = f"a stable-explore export is already there ({EXPORT_MARKER})"
        raise _refusal(given, why, fix=f"Pass {overwrite_option} to replace it, or export to a new folder.")
    return given


def export_file(path: str | Path, *, what: str, ds: DatasetMembers | None = None) -> Path:
    """Check ``path`` as the file a single-file export (``what``: Parquet, CSV) writes; the path to write.

    Refused: a path with no name, an existing folder, and any file inside a catalog home or a version's
    folder (a shard of the version being exported, say). The writer replaces the file only when done.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp())
    >>> export_file(out / "pets.csv", what="CSV") == out / "pets.csv"
    True
    >>> export_file(out, what="CSV")
    Traceback (most recent call last):
    ...
    stable_explore.errors.ExportTargetError: refusing to export to ...: it is a folder, and a CSV export writes one ...
    """
    fix = "Write the file outside every catalog home (e.g. ./exports/NAME.parquet)."
    given, resolved = _named(path, f"a {what} export")
    _check_outside_homes(given, resolved, ds, fix)
    if resolved.is_dir():
        raise _refusal(given, f"it is a folder, and a {what} export writes one file", fix=fix)
    return given
