"""The user-facing functions: build, load, browse, compare (listing, tags and upkeep: ``api.catalog``).

They are thin: the catalog decides names, versions and cache hits; the
dataset wraps a version for reading. This module sits above both so that the
catalog never needs the dataset class.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from stable_explore.catalog import (
    BuildOptions,
    BuildResult,
    VersionRef,
    build_version,
    locate_ref,
    open_catalog,
)
from stable_explore.dataset import CachedDataset
from stable_explore.dataset._foreign import open_foreign
from stable_explore.display.progress import progress_bar
from stable_explore.errors import CacheNotFoundError, InvalidArgumentTypeError
from stable_explore.storage.format.stable_datasets import accept_features
from stable_explore.storage.read.open_meta import read_sharded_cache_meta

if TYPE_CHECKING:
    from stable_explore.catalog import Catalog, SourcePlan
    from stable_explore.schema import Features
    from stable_explore.versioning.compare import Diff

from stable_explore.api.catalog import catalog_ref_of, datasets, fsck, gc, is_path_ref, tag, verify, versions

__all__ = ["browse", "build", "compare", "datasets", "fsck", "gc", "load", "tag", "verify", "versions"]


def _open(ref: VersionRef, *, build_info: str | None = None, features: Features | None = None) -> CachedDataset:
    meta = read_sharded_cache_meta(ref.cache_dir)
    return CachedDataset(
        meta, name=ref.name, version=ref.version_id, home=ref.home, build_info=build_info, features=features
    )


class BuildKwargs(TypedDict, total=False):
    """The keyword options of :func:`build`, declared once for the functions that pass them on.

    ``se.from_hf``, ``from_parquet``, ``from_pandas``, ``from_lance`` and ``concatenate_datasets``
    take them as ``**options`` (and ``home=`` themselves).

    One declaration, so a misspelt or mistyped option given to those functions is a type error
    where they are called, as it is for ``se.build``.

    Examples
    --------
    >>> from stable_explore.api import BuildKwargs
    >>> options: BuildKwargs = {"progress": False, "tag": "v1"}
    >>> sorted(options)
    ['progress', 'tag']
    """

    args: tuple[object, ...]
    kwargs: Mapping[str, object] | None
    description: str | None
    license: str | None
    metadata: Mapping[str, object] | None
    shard_size: int | str
    batch_size: int
    compression: str | None
    batched: bool
    tag: str | None
    force: bool
    key: str | None
    ignore: Iterable[str]
    watch: Iterable[str | os.PathLike[str]]
    check_content: bool
    storage_options: Mapping[str, object] | None
    progress: bool
    num_proc: int | None
    executor: Executor | None
    lock_timeout: float | None
    allow_empty: bool


def dataset_from_build(result: BuildResult) -> CachedDataset:
    """The dataset a build produced, carrying its explanation in ``build_info``."""
    return _open(result.ref, build_info=result.info)


def build(
    source: Iterable[Any] | Callable[..., Iterable[Any]],
    features: Features | Mapping[str, object],
    name: str | None = None,
    *,
    args: tuple[object, ...] = (),
    kwargs: Mapping[str, object] | None = None,
    description: str | None = None,
    license: str | None = None,
    metadata: Mapping[str, object] | None = None,
    shard_size: int | str = "256MB",
    batch_size: int = 1000,
    compression: str | None = None,
    batched: bool = False,
    tag: str | None = None,
    force: bool = False,
    key: str | None = None,
    ignore: Iterable[str] = (),
    watch: Iterable[str | os.PathLike[str]] = (),
    check_content: bool = False,
    home: str | Path | None = None,
    storage_options: Mapping[str, object] | None = None,
    progress: bool = True,
    num_proc: int | None = None,
    executor: Executor | None = None,
    lock_timeout: float | None = None,
    allow_empty: bool = True,
) -> CachedDataset:
    """Cache what ``source`` yields as a new version of ``name`` (or reuse the version it built before).

    Parameters
    ----------
    source:
        An iterable of example dicts or of ``(key, dict)`` pairs, or a
        generator function, called as ``source(*args, **kwargs)``. Items may also be
        batches of columns: a ``pyarrow.RecordBatch`` or ``Table``, a pandas ``DataFrame``,
        or (with ``batched=True``) a dict of field -> list of values; an optional ``__key__``
        column gives their keys. Such a build has the version id of the row build of the same
        rows, and checks values as it does. A single batch or table may be the source itself.
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
    batched:
        The source's dicts are batches of columns (field -> list), as ``datasets``'
        ``Dataset.from_dict`` takes them, not rows.
    tag:
        Also point this tag at the version.
    force:
        Build even when this source built a version before.
    key:
        An explicit cache key: the build is reused while the key (and the
        features and descriptive fields) are the same, whatever else changed.
    ignore:
        Names of arguments and variables to leave out of the fingerprint, for
        values that do not change the data (a logger, a connection, a client).
    watch:
        More files or folders whose state is part of the fingerprint: paths the
        code opens that no argument or variable names.
    check_content:
        Hash the contents of the files under the paths the fingerprint lists,
        not only their sizes and modification times (for file systems whose
        modification times cannot be trusted; slower).
    home:
        The catalog root (default ``$STABLE_EXPLORE_HOME`` or ``~/.cache/stable-explore``):
        a folder, or a bucket's URL such as ``s3://team-bucket/cache``.
    storage_options:
        For a bucket: settings instead of the environment's (see
        :class:`~stable_explore.storage.backends.object.ObjectStore`); kept in this process only.
    progress:
        Show a progress bar.
    num_proc:
        Build in parallel on this many processes of this machine. Every list
        argument of the generator (all of one length) is split into ``num_proc``
        contiguous parts (fewer if the lists are shorter), and each part runs as
        a task in its own process; other arguments go whole to every task. A
        build with no list argument is refused (say which inputs to split).
        ``num_proc=1`` (or None) builds serially.
    executor:
        Run the tasks on this :class:`concurrent.futures.Executor` instead: a Dask
        client's ``client.get_executor()``, one backed by Ray, or a pool of your own. Then
        ``num_proc`` is the number of tasks (default 32, or one per list item if
        fewer). Its workers must see the catalog home's file system.
    lock_timeout:
        Seconds to wait at most for each lock the build takes: the build lock another process
        building the same source holds (after a few seconds a ``LockWaitWarning`` says which
        process, on which host, since when), the dataset's refs lock, a bucket's leases; then
        ``LockTimeoutError`` naming the lock and its holder. None: the build lock is waited for
        as long as it takes, the refs lock ``$STABLE_EXPLORE_LOCK_TIMEOUT`` seconds (default 300).
    allow_empty:
        What a source that yields no rows (often a path that names nothing) does: publish an empty
        version, make it ``latest`` and warn (``EmptyBuildWarning``; True, the default, kept for
        existing code), or raise ``EmptyBuildError`` and publish nothing (False; what
        ``stable-explore build`` does unless given ``--allow-empty``).

    Returns
    -------
    CachedDataset
        ``ds.build_info`` says whether it was reused or built, and why.

    Notes
    -----
    A generator function is fingerprinted by its code and the code it reaches
    in your own modules (not site-packages or the standard library), the
    global values it reads, its arguments, the state of every file under the
    paths those name (and ``watch``), and the features; when all match an
    earlier build, that version is returned without running the generator,
    and ``latest`` is not moved. A value with no content hash does not stop
    the build: it runs every time, with a warning that names the value.

    A parallel build (``num_proc`` or ``executor``) gives the serial build's
    version id -- the same rows in the same order -- and so is the same cache
    entry: neither option is part of the fingerprint. Rows yielded without a key
    are keyed by their index in the whole build, as in a serial build. If a task
    fails, the others are cancelled, nothing is published, and the error names
    the task, its inputs and the row. A generator defined in a notebook is sent
    to the workers with cloudpickle (with the globals it reads); the rows come
    back as shards, never through pickling.

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

    In tasks, on an executor (``num_proc=2`` alone would start two processes):

    >>> from concurrent.futures import ThreadPoolExecutor
    >>> def halves(numbers):
    ...     for n in numbers:
    ...         yield {"x": n // 2}
    >>> serial = se.build(halves, features, kwargs={"numbers": list(range(6))}, home=home, progress=False)
    >>> with ThreadPoolExecutor(2) as pool:
    ...     tasks = se.build(halves, features, name="halves2", kwargs={"numbers": list(range(6))}, home=home,
    ...                      progress=False, executor=pool, num_proc=2)
    >>> tasks.version == serial.version, tasks.num_shards
    (True, 2)
    """
    source, features, key = _accept_hf(source, features, key)
    name = _name_of(source, name)
    options = BuildOptions(
        description=description,
        license=license,
        metadata=metadata or {},
        shard_size=shard_size,
        batch_size=batch_size,
        compression=compression,
        batched=batched,
        tag=tag,
        force=force,
        key=key,
        ignore=(ignore,) if isinstance(ignore, str) else tuple(ignore),
        watch=(watch,) if isinstance(watch, (str, os.PathLike)) else tuple(watch),
        check_content=check_content,
        num_proc=num_proc,
        executor=executor,
        lock_timeout=lock_timeout,
        allow_empty=allow_empty,
    )
    return build_from_options(
        open_catalog(home, storage_options),
        name,
        source,
        features,
        options,
        args=args,
        kwargs=kwargs,
        progress=progress,
    )


def _accept_hf(source: object, features: object, key: str | None) -> tuple[Any, Any, str | None]:
    """A ``datasets.Dataset`` source read as rows (images undecoded), keyed by its fingerprint; features converted."""
    from stable_explore.io.huggingface import HFRows, is_hf_dataset, our_features

    features = our_features(features)
    if is_hf_dataset(source):
        from stable_explore.dataset._sources import source_key
        from stable_explore.schema import Features

        source = HFRows(source, features if isinstance(features, Features) else None)
        key = key if key is not None else source_key(source)
    return source, features, key


def _name_of(source: object, name: str | None) -> str:
    """The dataset's name: ``name``, or the generator function's own name."""
    if name is None:
        name = getattr(source, "__name__", None)
        if not callable(source) or not name or name == "<lambda>":
            msg = "name= is required unless source is a named generator function"
            raise InvalidArgumentTypeError(msg)
    return name


def build_from_options(
    catalog: Catalog,
    name: str | None,
    source: object,
    features: Features | Mapping[str, object],
    options: BuildOptions,
    *,
    args: tuple[object, ...] = (),
    kwargs: Mapping[str, object] | None = None,
    plan: SourcePlan | None = None,
    progress: bool = True,
) -> CachedDataset:
    """Reuse or build a version with options already checked: what ``se.build``, the CLI and the magic call.

    ``plan`` overrides how the source is fingerprinted (the magic passes a cell's plan);
    ``progress`` shows a bar of the rows written.
    """
    result = build_version(  # checks the name and the features
        catalog,
        _name_of(source, name),
        source,
        features,
        options,
        args=tuple(args),
        kwargs=kwargs,
        plan=plan,
        progress=progress_bar if progress else None,
    )
    return dataset_from_build(result)


def load(
    ref: str | Path,
    *,
    home: str | Path | None = None,
    features: Features | Mapping[str, object] | None = None,
    storage_options: Mapping[str, object] | None = None,
) -> CachedDataset:
    """Open a version: ``"name"`` (latest), ``"name@<tag>"``, ``"name@<version-id prefix>"``, a URL or a cache path.

    Parameters
    ----------
    ref:
        What to open. A :class:`~pathlib.Path`, or a string with a path
        separator (or starting with ``.`` or ``~``), is a cache directory
        (a stable-datasets format-1 cache included), or a dataset's folder in a home (its
        latest version; ``FOLDER@TAG`` for another); ``"s3://bucket/cache/pets@clean"``
        is a version in a bucket; anything else is a catalog name.
    home:
        The catalog root: a folder or a bucket's URL.
    features:
        For caches that do not store their schema (stable-datasets' format 1, and stable-datasets'
        ``arrow-shards`` and ``lance-rows`` layouts): the features, which supply
        class names (checked against a stable-datasets cache's ``schema_fingerprint``).
        Ours, or stable-datasets' own ``Features`` object (read by its types' class
        names and attributes; images then decode to PIL as with ours), or Hugging Face's.
        A Lance dataset (stable-datasets' or any other, ``lance`` extra) is read
        through a mirror in Arrow shards under ``home/.foreign``; its folder is
        only read. stable-datasets' ``lance-video-frames`` cache opens as one row
        per frame (``video_id``, ``frame_idx``, ``frame``, ``video_path`` and the
        videos' metadata fields; see docs/format.md).
    storage_options:
        For a bucket: settings instead of the environment's; kept in this process only.

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
    from stable_explore.io.huggingface import our_features

    features = accept_features(our_features(features))
    if isinstance(ref, str):
        home, ref = locate_ref(ref, home)
    if is_path_ref(ref):
        path = Path(ref).expanduser()
        local_home = Path(home).expanduser() if home is not None and "://" not in str(home) else None
        foreign = open_foreign(path, features, local_home)  # stable-datasets' layouts, Lance datasets
        if foreign is not None:
            return foreign
        in_home = catalog_ref_of(path)
        if in_home is not None:  # a dataset's folder in a home (FOLDER or FOLDER@TAG): as its name there
            return load(in_home[1], home=in_home[0], features=features)
        meta = read_sharded_cache_meta(path)
        name = meta.version_metadata.name
        in_catalog = path.resolve().parent.name == "versions"
        return CachedDataset(
            meta,
            name=name,
            version=meta.version_metadata.version_id,
            home=path.resolve().parents[2] if in_catalog and name else None,
            features=features,
        )
    catalog = open_catalog(home, storage_options)
    located = catalog.resolve(str(ref))  # nothing of that name: one error, listing what exists
    try:
        return _open(located, features=features)
    except CacheNotFoundError:
        # the version the ref named was garbage-collected between reading the ref and opening it (the ref had
        # moved on meanwhile): read the ref once more
        return _open(catalog.resolve(str(ref)), features=features)


def browse(ref: CachedDataset | str | Path, *, home: str | Path | None = None, **options: Any) -> Any:
    """The shard browser widget for a dataset or a ref (``se.browse("pets@clean")``); see ``CachedDataset.browse``.

    Needs the ``lab`` extra (anywidget). Options are those of :meth:`CachedDataset.browse`.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> _ = se.build([{"x": i} for i in range(30)], se.Features(x=se.Value("int64")), name="n", home=home,
    ...              progress=False)
    >>> browser = se.browse("n", home=home, page_size=24)
    >>> len(browser.page_rows(0)), len(browser.page_rows(1))
    (24, 6)
    """
    dataset = ref if isinstance(ref, CachedDataset) else load(ref, home=home)
    return dataset.browse(**options)


def compare(
    a: CachedDataset | str,
    b: CachedDataset | str,
    *,
    home: str | Path | None = None,
    storage_options: Mapping[str, object] | None = None,
) -> Diff:
    """The difference from ``a`` to ``b`` (datasets or refs such as ``"pets@clean"``).

    Identical versions compare in O(1) by id; otherwise the diff lists metadata,
    schema, rows (added / removed / changed, matched by key) and label changes.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> features = se.Features(x=se.Value("int64"))
    >>> v1 = se.build([{"x": 1}, {"x": 2}], features, name="n", home=home, progress=False)
    >>> v2 = se.build([{"x": 1}, {"x": 3}], features, name="n", home=home, progress=False)
    >>> se.compare(v1, v2).summary()
    '+0 -0 ~1 rows'
    >>> se.compare("n", v2, home=home).identical
    True
    """
    from stable_explore.versioning.compare import compare as compare_versions

    left = load(a, home=home, storage_options=storage_options) if isinstance(a, str) else a
    right = load(b, home=home, storage_options=storage_options) if isinstance(b, str) else b
    return compare_versions(left, right)
