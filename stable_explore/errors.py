"""Every error stable-explore raises on purpose.

Each class also subclasses the builtin a user would catch anyway
(``ValueError``, ``FileNotFoundError``, ...), so ``except ValueError`` keeps
working. Messages name the row (key and index), the field and the file, say
what was expected and what was found, and how to fix it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "AnnotationError",
    "CacheCorruptionError",
    "CacheNotFoundError",
    "CacheWriteError",
    "ColumnNotFoundError",
    "DuplicateKeyError",
    "EmptyBuildError",
    "EncodingError",
    "ExportTargetError",
    "ImageTooLargeError",
    "InvalidArgumentTypeError",
    "InvalidNameError",
    "InvalidOptionError",
    "LeaseLostError",
    "LockTimeoutError",
    "MissingDependencyError",
    "NotACacheError",
    "NotInCatalogError",
    "ParallelBuildError",
    "RemoteStoreError",
    "RowIndexError",
    "SchemaError",
    "StableCacheError",
    "StableExploreError",
    "UnsafePathError",
    "VideoDecodeError",
    # warnings
    "StableExploreWarning",
    "GcProblemWarning",
    "EmptyBuildWarning",
    "LockWaitWarning",
    "UnfingerprintableWarning",
]


class StableExploreError(Exception):
    """Base class of every error raised by stable-explore."""


class StableExploreWarning(Warning):
    """Base class of every warning stable-explore shows; each also subclasses the builtin category it had.

    Examples
    --------
    Silence them all, or turn them into errors, with one filter:

    >>> import warnings
    >>> from stable_explore.errors import LockWaitWarning, StableExploreWarning
    >>> issubclass(LockWaitWarning, StableExploreWarning), issubclass(LockWaitWarning, UserWarning)
    (True, True)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", StableExploreWarning)
    ...     warnings.warn("waiting for a lock", LockWaitWarning, stacklevel=1)
    """


class SchemaError(StableExploreError, ValueError):
    """A feature definition, or a schema read from disk, is not valid.

    Examples
    --------
    >>> import stable_explore as se
    >>> try:
    ...     se.ClassLabel(names=["cat", "cat"])
    ... except SchemaError as exc:
    ...     print(exc)
    ClassLabel names must be unique; repeated: ['cat']
    """


class EncodingError(StableExploreError, ValueError):
    """An example could not be encoded into its feature's Arrow type.

    Attributes
    ----------
    field:
        The field (column) whose value was rejected.
    index:
        The running index of the example in the source, when known.
    key:
        The example's key, when known.
    reason:
        What was expected and what was found.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> rows = [{"x": 1}, {"x": "two"}]
    >>> try:
    ...     se.build(rows, se.Features(x=se.Value("int64")), name="n", home=tempfile.mkdtemp(), progress=False)
    ... except EncodingError as exc:
    ...     print(exc.index, exc.field, "|", exc.reason)
    1 x | expected int64, got 'two' (str)
    """

    def __init__(
        self,
        reason: str,
        *,
        field: str | None = None,
        index: int | None = None,
        key: object = None,
    ) -> None:
        self.reason = reason
        self.field = field
        self.index = index
        self.key = key
        super().__init__(self._compose())

    def _compose(self) -> str:
        where = []
        if self.index is not None:
            where.append(f"row {self.index}")
        if self.key is not None:
            where.append(f"key {self.key!r}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.reason}" if prefix else self.reason

    def located(self, *, index: int | None = None, key: object = None) -> EncodingError:
        """Return a copy of this error that also names the row."""
        return EncodingError(
            self.reason,
            field=self.field,
            index=self.index if index is None else index,
            key=self.key if key is None else key,
        )


class DuplicateKeyError(EncodingError):
    """Two rows of one build have the same key (keys match rows across versions, so each must be unique).

    Attributes
    ----------
    first_index:
        The row that had the key first; ``index`` is the later row.
    """

    def __init__(self, key: object, first_index: int, index: int) -> None:
        self.first_index = first_index
        reason = (
            f"duplicate key: rows {first_index} and {index} both have key {key!r}; "
            "keys must be unique, as rows are matched by key across versions"
        )
        super().__init__(reason, index=index, key=key)

    def _compose(self) -> str:
        return self.reason  # the reason already names both rows and the key


class ImageTooLargeError(StableExploreError, ValueError):
    """A stored image declares more pixels than the limit (a decompression bomb), so it is not decoded.

    The message names the row and field where they are known, the image's size and the limit.
    """


class CacheNotFoundError(StableExploreError, FileNotFoundError):
    """A cache directory, version or ref does not exist.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> try:
    ...     se.load("pets", home=tempfile.mkdtemp())
    ... except CacheNotFoundError as exc:
    ...     print(str(exc).split(" in ")[0])
    no dataset named 'pets'
    """


class CacheWriteError(StableExploreError, OSError):
    """Writing a cache failed on the file system (a full disk, a quota, an I/O error); nothing was published.

    ``errno``, ``strerror`` and ``filename`` are those of the failed call, with the file that could not be written.
    """


class CacheCorruptionError(StableExploreError, ValueError):
    """A cache on disk is damaged: a shard or ``_metadata.json`` does not match.

    Attributes
    ----------
    path:
        The file that is damaged.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> home = tempfile.mkdtemp()
    >>> ds = se.build([{"x": 1}, {"x": 2}], se.Features(x=se.Value("int64")), name="n", home=home, progress=False)
    >>> ds.cache_meta.shard_paths[0].write_bytes(b"not an Arrow file")  # damaged on disk
    17
    >>> try:
    ...     se.load("n", home=home).to_pandas()
    ... except CacheCorruptionError as exc:
    ...     print(exc.path.name, "|", exc.reason)  # doctest: +ELLIPSIS
    shard-00000.arrow | shard is 17 bytes, but ... were written (truncated or modified)
    """

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        where = path if isinstance(path, str) and "://" in path else self.path  # a URL keeps its "//"
        super().__init__(f"{where}: {reason}")


class NotACacheError(StableExploreError, ValueError):
    """A folder holds data in another layout (stable-datasets' Lance rows, for example), not a stable-explore cache.

    Nothing is damaged: the message names the layout, the folder, and what opens it.

    Attributes
    ----------
    path:
        The file that says which layout it is (or the folder).
    reason:
        What the folder holds, in words.
    """

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class UnsafePathError(CacheCorruptionError):
    """A path or storage key that could reach outside its folder (for example a shard name in ``_metadata.json``)."""


class AnnotationError(StableExploreError, ValueError):
    """An annotation file (COCO JSON, YOLO labels) that cannot be imported as it is.

    The message names the file, the image and the annotation (by their ids, or line numbers), says
    what was expected and what was found, and how to fix it; nothing was built.

    Attributes
    ----------
    path:
        The file.
    image:
        The image's id or file name, when one is concerned.
    annotation:
        The annotation's id or line, when one is concerned.
    """

    def __init__(self, reason: str, *, path: object, image: object = None, annotation: object = None) -> None:
        self.reason = reason
        self.path = str(path)
        self.image = image
        self.annotation = annotation
        where = [f"{self.path}"]
        if image is not None:
            where.append(f"image {image!r}")
        if annotation is not None:
            where.append(f"annotation {annotation!r}")
        super().__init__(f"{', '.join(where)}: {reason}")


class VideoDecodeError(StableExploreError, ValueError):
    """A video that cannot be decoded as asked: not a video, cut short, or without the frame wanted.

    The message names the video (its path, or the row and column it is stored in), says what went
    wrong and never follows a hang: a broken file fails at once.

    Attributes
    ----------
    source:
        The video's path, or a short description of its bytes.
    field:
        The column, when the video came from a dataset.
    index:
        The row number, when known.
    key:
        The row's key, when known.
    reason:
        What went wrong.
    """

    def __init__(
        self,
        reason: str,
        *,
        source: str | None = None,
        field: str | None = None,
        index: int | None = None,
        key: object = None,
    ) -> None:
        self.reason = reason
        self.source = source
        self.field = field
        self.index = index
        self.key = key
        where = []
        if index is not None:
            where.append(f"row {index}")
        if key is not None:
            where.append(f"key {key!r}")
        if field is not None:
            where.append(f"field {field!r}")
        if source is not None:
            where.append(f"video {source}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {reason}" if prefix else reason)

    def located(self, *, field: str | None = None, index: int | None = None, key: object = None) -> VideoDecodeError:
        """Return a copy of this error that also names the row and column."""
        return VideoDecodeError(
            self.reason,
            source=self.source,
            field=self.field if field is None else field,
            index=self.index if index is None else index,
            key=self.key if key is None else key,
        )


class InvalidNameError(StableExploreError, ValueError):
    """A dataset name, tag or version id is not a plain name (letters, digits, ``.``, ``_``, ``-``), or is reserved."""


class InvalidOptionError(StableExploreError, ValueError):
    """An option's value is not one stable-explore accepts; the message lists what it accepts."""


class ExportTargetError(InvalidOptionError):
    """An export's path is refused: inside (or above) a catalog home or a version, or a folder no export wrote.

    An export writes a new or empty folder, or replaces one an export wrote before (with
    ``overwrite=True``); the message names the path, what is there and how to proceed.
    """


class InvalidArgumentTypeError(StableExploreError, TypeError):
    """An argument has the wrong type (for example metadata that is not JSON-ready); the message says what fits."""


class ColumnNotFoundError(StableExploreError, KeyError):
    """A column that the dataset does not have; the message lists the columns it has."""

    def __str__(self) -> str:
        # KeyError shows its argument's repr (extra quotes); this message is meant to be read as it is
        return str(self.args[0]) if self.args else ""


class RowIndexError(StableExploreError, IndexError):
    """A row number outside the dataset (or view); the message gives the valid range."""


class NotInCatalogError(StableExploreError, ValueError):
    """An operation that needs a catalog (tagging, saving under a name) on a version opened by path."""


class MissingDependencyError(StableExploreError, ImportError):
    """An optional package is not installed; the message names the ``pip install`` that provides it."""


class UnfingerprintableWarning(StableExploreWarning, UserWarning):
    """A build reads something stable-explore cannot hash by content, so it rebuilds on every run.

    The message names the input and how to avoid it: ``key=`` (``--key``) or ``ignore=[...]`` (``--ignore``).
    A warning, not an error: the build still runs.
    """


class StableCacheError(StableExploreError):
    """``%stable_cache`` failed: the message says why in one line (the original error, if any, is chained)."""

    def __init__(self, message: str, original: BaseException | None = None) -> None:
        super().__init__(message)
        self.original = original


class LockTimeoutError(StableExploreError, TimeoutError):
    """Waiting for a lock (a build of the same source, a dataset's refs) took longer than ``lock_timeout``.

    Attributes
    ----------
    path:
        The lock file (a ``Path``), or a lease's URL in a bucket (a ``str``).
    holder:
        Who held it, as the holder recorded it (``process 123 on host, since ...``), or ``"unknown"``.
    waited:
        Seconds this process waited.

    Examples
    --------
    Another holder (here a thread) keeps the lock longer than this process waits:

    >>> import pathlib, tempfile, threading
    >>> from stable_explore.storage.backends.locks import hold_lock
    >>> lock = pathlib.Path(tempfile.mkdtemp()) / ".refs.lock"
    >>> held, done = threading.Event(), threading.Event()
    >>> def other() -> None:
    ...     with hold_lock(lock):
    ...         held.set()
    ...         done.wait()
    >>> thread = threading.Thread(target=other)
    >>> thread.start()
    >>> held.wait()
    True
    >>> try:
    ...     with hold_lock(lock, timeout=0.1):
    ...         pass
    ... except LockTimeoutError as exc:
    ...     print(exc.path == lock, exc.waited >= 0.1, exc.holder.startswith("process"))
    True True True
    >>> done.set()
    >>> thread.join()
    """

    def __init__(self, path: str | Path, holder: str, waited: float, *, advice: str | None = None) -> None:
        self.path = path if isinstance(path, str) and "://" in path else Path(path)
        self.holder = holder
        self.waited = waited
        advice = advice or (
            "if that process is stopped or hung, end it (its lock is then released), or wait longer "
            "(lock_timeout=, or STABLE_EXPLORE_LOCK_TIMEOUT seconds)"
        )
        super().__init__(f"gave up after waiting {waited:.1f} s for the lock {self.path}, held by {holder}; {advice}")


class LeaseLostError(StableExploreError, RuntimeError):
    """A lease on a bucket (the lock of a dataset's refs or of a build) was lost while held.

    Another machine took it over because this process did not renew it in time (it was stopped,
    or the server did not answer). The step it guarded was not done; run the operation again.

    Attributes
    ----------
    where:
        The lease object's URL.
    """

    def __init__(self, where: str, why: str) -> None:
        self.where = where
        super().__init__(f"lost the lease {where}: {why}; the step it guarded was not done, run it again")


class EmptyBuildError(StableExploreError, ValueError):
    """A build's source yielded no rows and the build was asked not to publish an empty version.

    Raised by ``se.build(..., allow_empty=False)`` and by ``stable-explore build`` without
    ``--allow-empty``; nothing is published and ``latest`` stays where it was. The message says
    which version stays the latest and how to publish the empty version anyway.
    """


class EmptyBuildWarning(StableExploreWarning, UserWarning):
    """A build's source yielded no rows: the version it published is empty, and is now ``latest``.

    Usually a path argument that names nothing (a typo, a folder not mounted). The message names the
    version before it, which stays available by its id. A warning, not an error: an empty version is valid.
    """


class LockWaitWarning(StableExploreWarning, UserWarning):
    """A build waits for a lock another process holds, or took over the lock of a process that is gone.

    The message says who holds it (pid, host) and since when. A warning, not an error: the build goes on.
    """


class GcProblemWarning(StableExploreWarning, UserWarning):
    """``gc`` found a dataset it could not read (a damaged ref, source record or metadata) and skipped it.

    The message names the file; the other datasets were collected. ``stable-explore fsck`` lists every problem.
    """


class RemoteStoreError(StableExploreError, OSError):
    """Object storage refused or failed a request (wrong credentials, a missing bucket, the network).

    The message names the URL and the key, never the credentials.

    Examples
    --------
    A bucket whose server does not answer (nothing listens on this port of the machine):

    >>> import socket, stable_explore as se
    >>> with socket.socket() as probe:
    ...     _ = probe.bind(("127.0.0.1", 0))
    ...     port = probe.getsockname()[1]
    >>> options = {"endpoint": f"http://127.0.0.1:{port}", "allow_http": True, "read_timeout": "1s",
    ...            "aws_access_key_id": "key", "aws_secret_access_key": "secret"}
    >>> try:
    ...     se.load("pets", home="s3://team/cache", storage_options=options)
    ... except RemoteStoreError as exc:
    ...     print(str(exc).split(" (endpoint")[0], "| names the secret:", "secret" in str(exc))
    s3://team/cache/pets/refs/latest | names the secret: False
    """

    url: str | None = None
    """The object's URL (no credentials), when the error is about one object."""
    status: int | None = None
    """The HTTP status the server answered with (404, 416...), or None when it did not answer (a transport failure)."""


class ParallelBuildError(StableExploreError, RuntimeError):
    """A task of a parallel build did not finish: its worker died, or could not reach the build's staging folder.

    A worker dies when it is killed, runs out of memory or calls ``os._exit``. The message names
    the task, its inputs and the rows it had read.

    An exception the generator itself raised in a task is raised as it is, with notes naming the task and row.
    """
