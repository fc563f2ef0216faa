"""The user-facing functions: build, load, list, tag, collect garbage, verify.

They are thin: the catalog decides names, versions and cache hits; the
dataset wraps a version for reading. This module sits above both so that the
catalog never needs the dataset class.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_explore.catalog import BuildResult, Catalog, VersionRef, build_version, version_id_of
from stable_explore.dataset import CachedDataset
from stable_explore.errors import CacheCorruptionError
from stable_explore.storage.format import read_sharded_cache_meta
from stable_explore.storage.verify import VerifyReport
from stable_explore.storage.verify import verify as verify_cache_dir

if TYPE_CHECKING:
    from stable_explore._table import Table
    from stable_explore.schema import Features

__all__ = ["browse", "build", "compare", "datasets", "gc", "load", "tag", "verify", "versions"]


def _open(ref: VersionRef, *, build_info: str | None = None, features: Features | None = None) -> CachedDataset:
    meta = read_sharded_cache_meta(ref.cache_dir)
    return CachedDataset(
        meta, name=ref.name, version=ref.version_id, home=ref.home, build_info=build_info, features=features
    )


def dataset_from_build(result: BuildResult) -> CachedDataset:
    """The dataset a build produced, carrying its explanation in ``build_info``."""
    return _open(result.ref, build_info=result.info)


def build(
    source: Iterable[Any] | Callable[..., Iterable[Any]],
    features: Features | Mapping[str, Any],
    name: str | None = None,
    *,
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    description: str | None = None,
    license: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    shard_size: int | str = "256MB",
    batch_size: int = 1000,
    compression: str | None = None,
    tag: str | None = None,
    force: bool = False,
    key: str | None = None,
    home: str | Path | None = None,
    progress: bool = True,
) -> CachedDataset:
    """Cache what ``source`` yields as a new version of ``name`` (or reuse the version it built before).

    Parameters
    ----------
    source:
        An iterable of example dicts or of ``(key, dict)`` pairs, or a
        generator function, called as ``source(*args, **kwargs)``.
    features:
        The schema (:class:`Features`); every example has exactly these fields.
    name:
        The dataset's name; defaults to the generator function's name.
    description, license, metadata:
        Stored with the version (``ds.DESCR``, ``ds.LICENSE``, ``ds.metadata``);
        they are part of the version id.
    shard_size, batch_size, compression:
        Shard target (``"256MB"``), rows per record batch (memory is about one
        batch), and ``None`` / ``"lz4"`` / ``"zstd"``.
    tag:
        Also point this tag at the version.
    force:
        Build even when this source built a version before.
    key:
        An explicit cache key, for sources that cannot be fingerprinted (plain
        iterables, unhashable arguments).
    home:
        The catalog root (default ``$STABLE_EXPLORE_HOME`` or ``~/.cache/stable-explore``).
    progress:
        Show a progress bar.

    Returns
    -------
    CachedDataset
        ``ds.build_info`` says whether it was reused or built, and why.

    Notes
    -----
    A generator function is fingerprinted by its source code, the global
    values it reads, its arguments and the features; when all match an
    earlier build, that version is returned without running the generator.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> def squares(n):
    ...     for i in range(n):
    ...         yield f"k{i}", {"x": i * i}
    >>> features = se.Features(x=se.Value("int64"))
    >>> ds = se.build(squares, features, args=(4,), home=home, progress=False)
    >>> ds.build_info
    'built: first build of squares'
    >>> se.build(squares, features, args=(4,), home=home, progress=False).build_info
    'reused: same source, arguments and features'
    """
    if name is None:
        name = getattr(source, "__name__", None)
        if not callable(source) or not name or name == "<lambda>":
            msg = "name= is required unless source is a named generator function"
            raise TypeError(msg)
    result = build_version(  # checks the name and the features
        Catalog(home),
        name,
        source,
        features,
        args=tuple(args),
        kwargs=kwargs,
        description=description,
        license=license,
        metadata=metadata,
        shard_size=shard_size,
        batch_size=batch_size,
        compression=compression,
        tag=tag,
        force=force,
        key=key,
        progress=progress,
    )
    return dataset_from_build(result)


def _is_path(ref: str | Path) -> bool:
    if isinstance(ref, Path):
        return True
    return os.sep in ref or (os.altsep is not None and os.altsep in ref) or ref.startswith(("~", "."))


def load(ref: str | Path, *, home: str | Path | None = None, features: Features | None = None) -> CachedDataset:
    """Open a version: ``"name"`` (latest), ``"name@<tag>"``, ``"name@<version-id prefix>"``, or a cache path.

    Parameters
    ----------
    ref:
        What to open. A :class:`~pathlib.Path`, or a string with a path
        separator (or starting with ``.`` or ``~``), is a cache directory
        (a seed-v1 cache included); anything else is a catalog name.
    home:
        The catalog root.
    features:
        For caches that do not store their schema (seed v1): the features,
        which supply class names.

    Raises
    ------
    CacheNotFoundError
        Nothing matches; the message lists the datasets, versions and tags that exist.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="one", home=home, progress=False)
    >>> se.load("one", home=home).version == se.load(f"one@{ds.version[:6]}", home=home).version
    True
    """
    if _is_path(ref):
        path = Path(ref).expanduser()
        meta = read_sharded_cache_meta(path)
        raw = meta.raw or {}
        name = raw.get("name") if isinstance(raw.get("name"), str) else None
        in_catalog = path.resolve().parent.name == "versions"
        return CachedDataset(
            meta,
            name=name,
            version=raw.get("version_id"),
            home=path.resolve().parents[2] if in_catalog and name else None,
            features=features,
        )
    return _open(Catalog(home).resolve(str(ref)), features=features)


def datasets(home: str | Path | None = None) -> Table:
    """Every dataset in the catalog: name, latest version, rows, size, versions, tags."""
    return Catalog(home).datasets_table()


def versions(name: str, home: str | Path | None = None) -> Table:
    """Every version of ``name``, newest first: id, created, rows, size, parent, message, tags."""
    catalog = Catalog(home)
    catalog.resolve(name)  # a clear error for an unknown name
    return catalog.versions_table(name.partition("@")[0])


def tag(dataset: CachedDataset | str, tag: str, *, home: str | Path | None = None) -> str:
    """Point ``tag`` at a dataset's version (or at a ref such as ``"pets@1a2b"``); returns the version id."""
    catalog = Catalog(home if home is not None or isinstance(dataset, str) else _home_of(dataset))
    if isinstance(dataset, str):
        ref = catalog.resolve(dataset)
        name, version_id = ref.name, ref.version_id
    else:
        name, version_id = dataset.name, dataset.version
    if name is None:
        msg = "only versions in a catalog can be tagged (this one was opened by path)"
        raise ValueError(msg)
    if tag == "latest":
        msg = "'latest' is set by builds and saves; choose another tag name"
        raise ValueError(msg)
    catalog.write_ref(name, tag, version_id)
    return version_id


def _home_of(dataset: CachedDataset) -> Path | None:
    return dataset._home


def gc(name: str | None = None, *, keep: int = 1, home: str | Path | None = None) -> int:
    """Delete versions no tag points at, beyond the ``keep`` newest per dataset; returns bytes freed.

    A tagged version (``latest`` included) is never deleted.
    """
    return Catalog(home).gc(name, keep=keep)


def verify(target: CachedDataset | str | Path, *, home: str | Path | None = None) -> VerifyReport:
    """Re-hash every shard of a version, and check its id against its metadata.

    ``target`` is a dataset, a ref (``"pets@clean"``) or a cache directory.

    Raises
    ------
    CacheCorruptionError
        Names the first damaged file.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="one", home=home, progress=False)
    >>> se.verify(ds).num_rows
    1
    """
    if isinstance(target, CachedDataset):
        cache_dir = target.cache_dir
    elif isinstance(target, str) and not _is_path(target):
        cache_dir = Catalog(home).resolve(target).cache_dir
    else:
        cache_dir = Path(target)
    report = verify_cache_dir(cache_dir)
    raw = read_sharded_cache_meta(cache_dir).raw or {}
    recorded = raw.get("version_id")
    if recorded is not None:
        expected = version_id_of(raw)
        if recorded != expected or (cache_dir.parent.name == "versions" and cache_dir.name != recorded):
            msg = (
                f"version id {recorded} (directory {cache_dir.name}) does not match the content "
                f"and labels recorded in the metadata, which give {expected}"
            )
            raise CacheCorruptionError(cache_dir / "_metadata.json", msg)
    return report


def browse(ref: CachedDataset | str | Path, *, home: str | Path | None = None, **options: Any) -> Any:
    """The shard browser widget for a dataset or a ref (``se.browse("pets@clean")``); see ``CachedDataset.browse``."""
    dataset = ref if isinstance(ref, CachedDataset) else load(ref, home=home)
    return dataset.browse(**options)


def compare(a: CachedDataset | str, b: CachedDataset | str, *, home: str | Path | None = None) -> Any:
    """The difference between two versions (datasets or refs); see :mod:`stable_explore.diff`."""
    from stable_explore.diff import compare as compare_versions

    return compare_versions(a, b, home=home)
