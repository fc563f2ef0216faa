"""``se.push`` and ``se.pull``: copy a version between two homes (folders or buckets), moving only what is missing.

The copying itself (by shard digest, resumable, metadata last) is :mod:`stable_explore.catalog.transfer`;
this is the public entry point with its progress bar in bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from stable_explore.api.building import load
from stable_explore.catalog import (
    StoreCatalog,
    TransferReport,
    copy_version,
    open_catalog,
    open_store,
    split_url_ref,
    version_nbytes,
)
from stable_explore.display.progress import bytes_bar
from stable_explore.errors import NotInCatalogError
from stable_explore.storage.backends.locks import check_lock_timeout, waiting_at_most
from stable_explore.storage.check.verify import check_rows

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

__all__ = ["pull", "push"]


def push(
    dataset: CachedDataset | str,
    to: str | Path,
    *,
    home: str | Path | None = None,
    storage_options: Mapping[str, object] | None = None,
    progress: bool = True,
    lock_timeout: float | None = None,
) -> TransferReport:
    """Copy a version to another home (a bucket such as ``s3://team-bucket/cache``, or a folder).

    Only what the other side lacks moves: shards it already holds (by digest) are copied there
    without an upload, and files left by an interrupted push are kept. The version appears
    there only when whole (its metadata goes last); its tags come along, and the other home's
    ``latest`` moves to it if it is newer.

    Parameters
    ----------
    dataset:
        A dataset, or a ref in the local home such as ``"pets@clean"``.
    to:
        The other home.
    storage_options:
        Object-storage settings instead of the environment
        (see :class:`~stable_explore.storage.backends.object.ObjectStore`).
    lock_timeout:
        Seconds to wait at most for the other home's refs lock (a lease in a bucket; default
        ``$STABLE_EXPLORE_LOCK_TIMEOUT``, else 300), then ``LockTimeoutError`` naming the holder.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home, team = tempfile.mkdtemp(), tempfile.mkdtemp()
    >>> ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="n", home=home, progress=False)
    >>> se.push(ds, team, progress=False).files_sent  # the shard, its batch digests and the content runs
    3
    >>> se.load("n", home=team).version == ds.version
    True
    """
    check_lock_timeout(lock_timeout)
    if isinstance(dataset, str):
        dataset = load(dataset, home=home)
    if dataset.name is None or dataset.home is None:
        msg = f"only versions in a catalog can be pushed; {dataset.cache_dir} was opened by path outside one"
        raise NotInCatalogError(msg)
    source = open_catalog(dataset.home)
    target = StoreCatalog(open_store(to, storage_options))
    with waiting_at_most(lock_timeout):
        return _transfer(source, dataset.name, dataset.version, target, dataset.nbytes, progress)


def pull(
    url: str,
    *,
    home: str | Path | None = None,
    storage_options: Mapping[str, object] | None = None,
    progress: bool = True,
    lock_timeout: float | None = None,
) -> CachedDataset:
    """Bring a version from another home into the local one: ``se.pull("s3://team-bucket/cache/pets@clean")``.

    Only missing files are downloaded (shards already in the local home are hard-linked), the
    copy is verified, and an interrupted pull resumes where it stopped. ``lock_timeout`` bounds
    the wait for the local home's refs lock (default ``$STABLE_EXPLORE_LOCK_TIMEOUT``, else 300
    seconds), then ``LockTimeoutError`` naming the holder.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> team, mine = tempfile.mkdtemp(), tempfile.mkdtemp()
    >>> ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="n", home=team, progress=False)
    >>> se.pull(f"file://{team}/n", home=mine, progress=False).version == ds.version
    True
    """
    check_lock_timeout(lock_timeout)
    where, ref = split_url_ref(url)
    source = StoreCatalog(open_store(where, storage_options))
    name, version_id = source.resolve_id(ref)
    target = open_catalog(home)  # the local home, or the bucket $STABLE_EXPLORE_HOME names
    nbytes = version_nbytes(source, name, version_id)
    with waiting_at_most(lock_timeout):
        report = _transfer(source, name, version_id, target, nbytes, progress, verify=True)
    pulled = load(f"{name}@{version_id}", home=target.where)
    if report.existed or target.store.local_path(name) is None:
        pulled.verify()  # not checked on arrival (already there, or in a bucket): every shard re-hashed
    else:
        check_rows(pulled.cache_dir)  # shard digests were checked as they arrived: the rows and the id remain
    return pulled


def _transfer(
    source: StoreCatalog,
    name: str,
    version_id: str,
    target: StoreCatalog,
    nbytes: int,
    progress: bool,
    *,
    verify: bool = False,
) -> TransferReport:
    if not progress:
        return copy_version(source, name, version_id, target, verify=verify)
    with bytes_bar(f"copying {name}@{version_id[:8]}", nbytes) as on_file:
        return copy_version(source, name, version_id, target, on_file=on_file, verify=verify)
