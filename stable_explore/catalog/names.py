"""Names of datasets, tags and version ids, and where the catalog's home is.

Examples
--------
>>> check_name("pets-v2")
'pets-v2'
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore.errors import InvalidNameError

if TYPE_CHECKING:
    from stable_explore.storage.backends.protocol import Store

__all__ = [
    "EVALUATIONS_DIR",
    "HOME_ENV",
    "SIGNALS_DIR",
    "VIDEO_PROBES_DIR",
    "LATEST",
    "NAME_PATTERN",
    "check_name",
    "is_url",
    "locate_ref",
    "open_store",
    "resolve_home",
    "split_url_ref",
]

# Results kept beside a dataset's versions, one folder per version under these (gc removes a gone
# version's): computed signals (stable_explore.signals.cache), evaluations (stable_explore.evaluation.cache)
# and videos' probes (stable_explore.dataset.video_probes)
SIGNALS_DIR = "signals"
EVALUATIONS_DIR = "evaluations"
VIDEO_PROBES_DIR = "video-probes"

HOME_ENV = "STABLE_EXPLORE_HOME"
LATEST = "latest"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # fullmatch only: "$" accepts a trailing newline


def resolve_home(home: str | Path | None = None) -> Path:
    """The catalog root: ``home``, else ``$STABLE_EXPLORE_HOME``, else ``~/.cache/stable-explore``."""
    if home is not None:
        return Path(home).expanduser()
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "stable-explore"


def check_name(name: object, what: str = "dataset name") -> str:
    """Names and tags are plain file names: letters, digits, ``.``, ``_``, ``-``."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or name in (".", ".."):
        msg = (
            f"{what} must start with a letter or digit and use only letters, digits, '.', '_' and '-' "
            f"(at most 128 characters), got {name!r}"
        )
        raise InvalidNameError(msg)
    return name


def is_url(home: str | Path) -> bool:
    """Whether ``home`` is a URL of object storage (``s3://...``) rather than a folder."""
    text = str(home)
    return "://" in text and not text.startswith("file://")


def open_store(home: str | Path | None = None, storage_options: Mapping[str, object] | None = None) -> Store:
    """The store of a home: an :class:`ObjectStore` for ``s3://``, ``gs://``, ``az://``; else a :class:`LocalStore`."""
    if home is not None and is_url(home):
        from stable_explore.storage.backends.object import ObjectStore

        return ObjectStore(str(home), storage_options)
    from stable_explore.storage.backends.local import LocalStore  # file locks and durable writes: a store's own

    text = str(home) if home is not None else None
    if text is not None and text.startswith("file://"):
        text = text[len("file://") :]
    return LocalStore(resolve_home(text))


def split_url_ref(url: str) -> tuple[str, str]:
    """``"s3://bucket/cache/pets@clean"`` -> (``"s3://bucket/cache"``, ``"pets@clean"``); a folder home too.

    Examples
    --------
    >>> split_url_ref("s3://bucket/cache/pets@clean")
    ('s3://bucket/cache', 'pets@clean')
    >>> split_url_ref("/data/team-cache/pets")
    ('/data/team-cache', 'pets')
    """
    home, _, ref = url.rstrip("/").rpartition("/")
    if not home or not ref:
        msg = (
            f"expected HOME/NAME[@VERSION], such as s3://bucket/cache/pets@clean or /data/team-cache/pets, got {url!r}"
        )
        raise InvalidNameError(msg)
    check_name(ref.partition("@")[0])
    return home, ref


def locate_ref(ref: str, home: str | Path | None) -> tuple[str | Path | None, str]:
    """The home and the ref in it that ``ref`` names: a URL ref carries its home, any other ref is in ``home``.

    Every public call that takes a name parses it here, so ``s3://bucket/cache/pets@clean`` means
    the same to ``load``, ``verify``, ``compare``, ``tag``, ``versions``, ``fsck`` and ``push``.

    Examples
    --------
    >>> locate_ref("s3://bucket/cache/pets@clean", None)
    ('s3://bucket/cache', 'pets@clean')
    >>> locate_ref("pets@clean", "/data/home")
    ('/data/home', 'pets@clean')
    """
    if is_url(ref):
        return split_url_ref(ref)
    return home, ref
