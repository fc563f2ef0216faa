"""Each video's probe (frames, fps, size, codec), kept per version: in memory, and in the home for a new process.

``ds.clips`` (frame counts) and the browser (posters, duration columns) probe the same videos; both
keep what they find here, by version, stored column and version row. A version never changes, so a
video stored in it probes the same for good: its probe is also written to
``<home>/<name>/video-probes/<version>/<digest>.json`` (the digest of the stored column's name) and
read back by the next kernel, which then does not probe again; gc removes a deleted version's probes
with it. A video stored as a path is kept with its file's identity (size, modification time...) and
probed again when the file changed. Why a video cannot be read is kept for the process only.

Examples
--------
>>> import tempfile, stable_explore as se
>>> from stable_explore.testing.videos import indexed_video
>>> ds = se.build([{"video": indexed_video(5)}], se.Features(video=se.Video()), name="v",
...               home=tempfile.mkdtemp(), progress=False)
>>> len(ds.clips(window_length=2)), video_probes(ds, "video").get(0).frames  # clips probed it, once
(4, 5)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore.catalog.names import VIDEO_PROBES_DIR
from stable_explore.schema.video import video_cell
from stable_explore.storage.kept import Kept, file_identity, kept

if TYPE_CHECKING:
    from stable_explore.dataset._members import DatasetMembers
    from stable_explore.schema.video_codec import VideoInfo

__all__ = ["PROBES_DIR", "VideoProbes", "video_probes"]

PROBES_DIR = VIDEO_PROBES_DIR
_FORMAT = 1  # raise when what a probe holds changes: older files are then never read
_log = logging.getLogger("stable_explore")
_lock = threading.Lock()


class VideoProbes:
    """The probes of one stored column's videos in one version, by version row (thread-safe)."""

    def __init__(self, path: Path | None) -> None:
        self._path = path  # where they are kept in the home (None: in memory only)
        self._known: dict[int, Any] = {}  # version row -> VideoInfo, or why it cannot be read
        self._files: dict[int, tuple[str, list[int]]] = {}  # version row -> its file's path and identity
        self._lock = threading.Lock()
        if path is not None:
            self._read(path)

    def get(self, row: int) -> VideoInfo | str | None:
        """Row ``row``'s probe: its :class:`VideoInfo`, why it cannot be read, or None when not probed yet."""
        with self._lock:
            found: VideoInfo | str | None = self._known.get(int(row))
            return found

    def put(self, found: Iterable[tuple[int, Any, VideoInfo | str]]) -> None:
        """Keep probes: ``(version row, stored cell, probe)`` each; the videos' infos are written to the home."""
        wrote = False
        with self._lock:
            for row, cell, probe in found:
                self._known[int(row)] = probe
                video = video_cell(cell)
                if not isinstance(probe, str) and video is not None and video.bytes is None and video.path:
                    identity = file_identity(video.path)
                    if identity is not None:
                        self._files[int(row)] = (str(video.path), list(identity))
                wrote = wrote or not isinstance(probe, str)
            if wrote and self._path is not None:
                self._write(self._path)

    def _read(self, path: Path) -> None:
        from stable_explore.schema.video_codec import VideoInfo

        try:
            kept_probes = json.loads(path.read_text())
            if kept_probes.get("format") != _FORMAT:
                return
            for row, entry in kept_probes["rows"].items():
                file = entry.get("file")
                if file is not None and list(file_identity(file[0]) or ()) != file[1]:
                    continue  # the file changed since (or is gone): probed again
                self._known[int(row)] = VideoInfo(**entry["info"])
                if file is not None:
                    self._files[int(row)] = (file[0], file[1])
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            _log.info("the kept video probes %s cannot be read (%s); probing again", path, exc)

    def _write(self, path: Path) -> None:
        rows = {
            str(row): {"info": probe.to_dict(), "file": self._files.get(row)}
            for row, probe in self._known.items()
            if not isinstance(probe, str)
        }
        temp = path.with_name(f".{path.stem}.tmp-{os.getpid()}-{threading.get_ident()}.json")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temp.write_text(json.dumps({"format": _FORMAT, "rows": rows}))
            temp.replace(path)  # readers see the old file or the new one, never half
        except OSError as exc:
            _log.info("could not keep video probes at %s (%s); a new process probes again", path, exc)
            with contextlib.suppress(OSError):
                temp.unlink()


_KEPT: Kept[tuple[str, str, str], VideoProbes] = kept("video probes, per version and column", max_entries=64)


def video_probes(ds: DatasetMembers, stored_column: str) -> VideoProbes:
    """The probes of ``ds``'s version's videos in the stored column ``stored_column`` (one object per process).

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> ds = se.build([{"video": None}], se.Features(video=se.Video()), name="v", home=tempfile.mkdtemp(),
    ...               progress=False)
    >>> video_probes(ds, "video").get(0) is None  # not probed yet
    True
    """
    path = _path_of(ds, stored_column)
    key = (ds.version, stored_column, str(path))
    with _lock:
        probes = _KEPT.get(key)
        if probes is None:
            probes = VideoProbes(path)
            _KEPT.put(key, probes)
    return probes


def _path_of(ds: DatasetMembers, stored_column: str) -> Path | None:
    if ds.home is None or not ds.name:
        return None
    from stable_explore.catalog import open_catalog

    try:
        home = Path(open_catalog(ds.home).home)
    except (OSError, ValueError, TypeError):
        return None
    digest = hashlib.sha256(stored_column.encode()).hexdigest()[:16]
    return home / ds.name / PROBES_DIR / ds.version / f"{digest}.json"
