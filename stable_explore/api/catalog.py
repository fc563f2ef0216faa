"""The catalog's listings and upkeep: ``se.datasets``, ``versions``, ``tag``, ``gc``, ``verify``, ``fsck``.

``stable_explore.api.building`` builds and opens versions; this module lists them, names them and checks
and tidies the homes they live in. Both are re-exported at the package root.

Examples
--------
>>> import tempfile, stable_explore as se
>>> home = tempfile.mkdtemp()
>>> _ = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="one", home=home, progress=False)
>>> se.tag("one", "first", home=home) == se.load("one@first", home=home).version
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore.catalog.listing import VERSION_COLUMNS, dataset_columns, dataset_rows, version_rows
from stable_explore.catalog.names import locate_ref
from stable_explore.catalog.remote import open_catalog
from stable_explore.display.table import listing_table
from stable_explore.errors import CacheNotFoundError, NotInCatalogError
from stable_explore.storage.backends.locks import waiting_at_most

if TYPE_CHECKING:
    from stable_explore.catalog import FsckReport, GcReport
    from stable_explore.dataset import CachedDataset
    from stable_explore.display.table import Table
    from stable_explore.storage.check.verify import VerifyReport

# ``se.datasets``, ``se.versions`` and ``stable-explore ls`` read the catalog's JSON: what checks, collects or opens
# versions (verify, fsck, gc, CachedDataset, with pyarrow and numpy) is imported in the function that does (issue 39)

__all__ = ["catalog_ref_of", "datasets", "fsck", "gc", "is_dataset_folder", "is_path_ref", "tag", "verify", "versions"]


def is_path_ref(ref: str | Path) -> bool:
    """Whether ``ref`` names a folder (a ``Path``, a path separator, or ``~``/``.`` first), not a catalog name."""
    if isinstance(ref, Path):
        return True
    return os.sep in ref or (os.altsep is not None and os.altsep in ref) or ref.startswith(("~", "."))


def is_dataset_folder(folder: Path) -> bool:
    """Whether ``folder`` is a dataset's folder in a home (``versions/`` and ``refs/``)."""
    return (folder / "versions").is_dir() and (folder / "refs").is_dir()


def catalog_ref_of(path: Path) -> tuple[Path, str] | None:
    """``(home, "name[@ref]")`` when ``path`` is a dataset's folder in a home (or that folder + ``@ref``).

    A home itself (a folder of dataset folders) is refused, naming its datasets and how to open one.
    """
    from stable_explore.storage.format.cache_meta import METADATA_FILE

    if (path / METADATA_FILE).exists():
        return None
    name = path.name.partition("@")[0]
    if name and is_dataset_folder(path.with_name(name)):
        return path.parent, path.name
    if path.is_dir():
        names = sorted(p.name for p in path.iterdir() if is_dataset_folder(p))
        if names:
            msg = (
                f"{path} is a catalog home (datasets: {names}), not a version: open one with "
                f"se.load({names[0]!r}, home={str(path)!r})"
            )
            raise CacheNotFoundError(msg)
    return None


def datasets(home: str | Path | None = None, *, storage_options: Mapping[str, object] | None = None) -> Table:
    """Every dataset in the catalog: name, latest version, rows, size, versions, tags.

    Parameters
    ----------
    home:
        The catalog root (default ``$STABLE_EXPLORE_HOME`` or ``~/.cache/stable-explore``).

    Returns
    -------
    Table
        Prints as text, renders as HTML in a notebook, ``.to_pandas()`` for a DataFrame.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> _ = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="one", home=home, progress=False)
    >>> [(row["name"], row["rows"], row["versions"]) for row in se.datasets(home)]
    [('one', 1, 1)]
    """
    catalog = open_catalog(home, storage_options)
    rows = dataset_rows(catalog)  # a dataset that cannot be read has a 'problem' naming the file
    return listing_table(dataset_columns(rows), rows, title=f"datasets in {catalog.where}")


def versions(
    name: str, home: str | Path | None = None, *, storage_options: Mapping[str, object] | None = None
) -> Table:
    """Every version of ``name``, newest first: id, created, rows, size, parent, message, tags.

    Parameters
    ----------
    name:
        A dataset name (a ref such as ``"pets@clean"`` lists the versions of ``pets``).
    home:
        The catalog root.

    Raises
    ------
    CacheNotFoundError
        No such dataset; the message lists those that exist.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> raw = se.build([{"x": 1}, {"x": 2}], se.Features(x=se.Value("int64")), name="n", home=home, progress=False)
    >>> clean = raw.drop([0]).save(message="drop the first row", progress=False)
    >>> [(row["message"], row["parent"] == raw.version) for row in se.versions("n", home=home)]
    [('drop the first row', True), ('', False)]
    """
    home, name = locate_ref(name, home)
    catalog = open_catalog(home, storage_options)
    catalog.resolve_id(name)  # a clear error for an unknown name
    dataset = name.partition("@")[0]
    return listing_table(VERSION_COLUMNS, version_rows(catalog, dataset), title=f"versions of {dataset}")


def tag(
    dataset: CachedDataset | str,
    tag: str,
    *,
    home: str | Path | None = None,
    storage_options: Mapping[str, object] | None = None,
    lock_timeout: float | None = None,
) -> str:
    """Point ``tag`` at a dataset's version (or at a ref such as ``"pets@1a2b"``); returns the version id.

    ``latest`` is a tag like any other: builds and saves move it to what they create, and
    ``se.tag(ds, "latest")`` makes an older version the one ``se.load(name)`` opens.
    ``lock_timeout`` bounds the wait for the dataset's refs lock (default
    ``$STABLE_EXPLORE_LOCK_TIMEOUT`` seconds, else 300), then ``LockTimeoutError``.

    Raises
    ------
    InvalidNameError
        ``tag`` is not a plain name.
    NotInCatalogError
        The dataset was opened by path outside a catalog (and no ``home`` was given).

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="one", home=home, progress=False)
    >>> se.tag(ds, "reviewed") == ds.version == se.load("one@reviewed", home=home).version
    True
    """
    if isinstance(dataset, str):
        home, dataset = locate_ref(dataset, home)
        catalog = open_catalog(home, storage_options)
        resolved: tuple[str | None, str] = catalog.resolve_id(dataset)
        name, version_id = resolved
    else:
        if home is None and dataset.home is None:
            msg = f"only versions in a catalog can be tagged; {dataset.cache_dir} was opened by path outside one"
            raise NotInCatalogError(msg)
        catalog = open_catalog(home if home is not None else dataset.home, storage_options)
        name, version_id = dataset.name, dataset.version
    if name is None:
        msg = "only versions in a catalog can be tagged (this one was opened by path)"
        raise NotInCatalogError(msg)
    with waiting_at_most(lock_timeout):
        catalog.write_ref(name, tag, version_id)
    return version_id


def gc(
    name: str | None = None,
    *,
    keep: int = 1,
    home: str | Path | None = None,
    storage_options: Mapping[str, object] | None = None,
    lock_timeout: float | None = None,
) -> GcReport:
    """Delete versions no tag points at, beyond the ``keep`` newest per dataset; returns bytes freed.

    A tagged version (``latest`` included) is never deleted, nor one a build reused in the last
    minute, even while builds run (gc and publishing share a lock per dataset). Leftovers of
    processes that are gone are swept: temp folders and files, lock files nobody holds, an empty
    dataset left by a failed first build. A dataset gc cannot read is skipped with a
    ``GcProblemWarning`` naming the file; the others are collected.

    Returns
    -------
    GcReport
        The bytes freed (an ``int``), with ``.removed`` (``name@version``), ``.swept`` and
        ``.problems``; ``.summary()`` lists them.

    Parameters
    ----------
    name:
        One dataset (or its URL, ``"s3://bucket/cache/pets"``), or every dataset when None.
    keep:
        How many of the newest versions to keep besides the tagged ones.
    home:
        The catalog root.
    lock_timeout:
        Seconds to wait at most for each dataset's refs lock (default ``$STABLE_EXPLORE_LOCK_TIMEOUT``,
        else 300), then ``LockTimeoutError`` naming the lock and its holder.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> features = se.Features(x=se.Value("int64"))
    >>> old = se.build([{"x": 1}], features, name="n", home=home, progress=False)
    >>> new = se.build([{"x": 2}], features, name="n", home=home, progress=False)
    >>> se.gc("n", keep=0, home=home) > 0, [row["version"] for row in se.versions("n", home=home)] == [new.version]
    (True, True)
    """
    from stable_explore.catalog.maintenance.gc import collect_garbage

    if name is not None:
        home, name = locate_ref(name, home)
    with waiting_at_most(lock_timeout):
        return collect_garbage(open_catalog(home, storage_options), name, keep=keep)


def verify(
    target: CachedDataset | str | Path,
    *,
    home: str | Path | None = None,
    storage_options: Mapping[str, object] | None = None,
) -> VerifyReport:
    """Re-hash every shard of a version, and check its id against its metadata.

    ``target`` is a dataset, a ref (``"pets@clean"``, ``"s3://bucket/cache/pets@clean"``) or a cache
    directory. A version in a bucket is fetched whole into a temp folder to be re-hashed.

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
    from stable_explore.dataset import CachedDataset
    from stable_explore.storage.check.verify import verify as verify_cache_dir

    if isinstance(target, CachedDataset):
        return target.verify()
    if isinstance(target, str):
        home, target = locate_ref(target, home)
    if isinstance(target, str) and not is_path_ref(target):
        return verify_cache_dir(open_catalog(home, storage_options).resolve(target).cache_dir)
    path = Path(target).expanduser()
    in_home = catalog_ref_of(path)
    if in_home is not None:  # a dataset's folder in a home (FOLDER or FOLDER@TAG), as se.load takes it
        return verify_cache_dir(open_catalog(in_home[0]).resolve(in_home[1]).cache_dir)
    return verify_cache_dir(path)


def fsck(
    name: str | None = None, *, home: str | Path | None = None, storage_options: Mapping[str, object] | None = None
) -> FsckReport:
    """Check the whole catalog (or one dataset): every shard, record batch, version id, ref and source record.

    Nothing is changed. ``str(report)`` lists one line per problem, naming the file, and a summary
    with the MB/s read; ``report.ok`` is True when there is none. On a home in a bucket, every
    version is fetched whole and checked, and problems are named by URL; leftovers of an
    interrupted publish are reported (another machine's publish in progress looks the same).

    Raises
    ------
    CacheNotFoundError
        ``name`` is given and no such dataset exists.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> _ = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="one", home=home, progress=False)
    >>> se.fsck(home=home).ok
    True
    """
    from stable_explore.catalog.maintenance.fsck import fsck as fsck_catalog
    from stable_explore.catalog.maintenance.fsck_remote import fsck_remote
    from stable_explore.catalog.remote import RemoteCatalog

    if name is not None:
        home, name = locate_ref(name, home)
    catalog = open_catalog(home, storage_options)
    if isinstance(catalog, RemoteCatalog):  # no folders to walk: each version is fetched and checked
        return fsck_remote(catalog, name)
    return fsck_catalog(catalog, name)
