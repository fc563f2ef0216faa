"""Export targets: a folder an export writes is empty, new, or one an earlier export of ours wrote."""

from __future__ import annotations

from pathlib import Path

from stable_explore.errors import InvalidOptionError

__all__ = ["MARK", "claim_folder", "float_text"]

MARK = ".stable-explore-export"  # the file an export leaves in each folder it writes


def claim_folder(path: Path, what: str) -> Path:
    """Make ``path`` a folder this export may write, refusing a non-empty folder an export of ours did not write.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = claim_folder(pathlib.Path(tempfile.mkdtemp()) / "out", "to_yolo")
    >>> sorted(p.name for p in folder.iterdir())
    ['.stable-explore-export']
    """
    if path.exists() and not path.is_dir():
        msg = f"{what}: {str(path)!r} is a file, not a folder; give a folder path"
        raise InvalidOptionError(msg)
    if path.is_dir() and any(path.iterdir()) and not (path / MARK).exists():
        msg = (
            f"{what}: the folder {str(path)!r} is not empty and no export of stable-explore wrote it; "
            "give a new or empty folder (nothing was written)"
        )
        raise InvalidOptionError(msg)
    path.mkdir(parents=True, exist_ok=True)
    (path / MARK).write_text(f"written by stable-explore's {what}\n", encoding="utf-8")
    return path


def float_text(value: float) -> float:
    """A stored float32 as the shortest float that reads back as it (10.3, not 10.300000190734863).

    Examples
    --------
    >>> import numpy as np
    >>> float(np.float32(10.3)), float_text(np.float32(10.3))
    (10.300000190734863, 10.3)
    """
    import numpy as np

    return float(np.format_float_positional(np.float32(value), unique=True, trim="-"))
