"""``BuildOptions``: every choice a build takes besides its source, checked once, shared by ``se.build`` and the magic.

Examples
--------
>>> options = BuildOptions(description="digits", shard_size="64MB", tag="raw")
>>> options.shard_size_bytes, options.descriptive["description"]
(67108864, 'digits')
>>> BuildOptions(batch_size=0)
Traceback (most recent call last):
...
stable_explore.errors.InvalidOptionError: batch_size must be a positive int, got 0
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stable_explore._canonical import canonical_json, nested_too_deep, unencodable_text
from stable_explore._units import parse_size
from stable_explore.catalog.build_arguments import BUILD_ARGUMENTS
from stable_explore.catalog.names import check_name
from stable_explore.errors import InvalidArgumentTypeError, InvalidOptionError
from stable_explore.storage.format.cache_meta import COMPRESSIONS

if TYPE_CHECKING:
    import argparse  # the CLI and the magic parse; a build that only takes options need not import argparse

__all__ = ["BUILD_ARGUMENTS", "BuildOptions", "check_metadata", "options_from_args"]


@dataclass(frozen=True)
class BuildOptions:
    """How to build a version: what it records, how its shards are written, and how the cache decides.

    Attributes
    ----------
    description, license, metadata:
        Stored with the version and part of its id (``metadata`` must be JSON-ready).
    shard_size, batch_size, compression:
        Shard target (bytes, or a string such as ``"256MB"``), rows per record batch, and
        ``None`` / ``"lz4"`` / ``"zstd"``.
    batched:
        The source's dicts are batches of columns (field -> list of values), not rows. Arrow
        record batches and tables and pandas DataFrames are batches whatever this says.
    tag:
        Also point this tag at the version.
    force:
        Build even when this source built a version before.
    key:
        An explicit cache key, instead of fingerprinting the source.
    ignore:
        Names of arguments and variables left out of the fingerprint (values that do not
        change the data, such as a logger or a connection).
    watch:
        More files or folders whose state is part of the fingerprint (paths the code opens
        that no argument or variable names).
    check_content:
        Hash the contents of the files the fingerprint lists, not only their sizes and
        modification times (for file systems whose times cannot be trusted).
    message:
        A note stored with the version (shown by ``se.versions``).
    num_proc, executor:
        Build in parallel (see :mod:`stable_explore.catalog.parallel.executor`): ``num_proc`` tasks on as
        many spawned processes, or tasks on ``executor`` (any :class:`concurrent.futures.Executor`;
        then ``num_proc`` is the number of tasks). Neither is part of the cache decision.
    lock_timeout:
        Seconds to wait at most for each lock the build takes: another process building the same
        source, the dataset's refs lock, a bucket's leases (None: the build lock is waited for as
        long as it takes, saying who holds it after a few seconds; the refs lock
        ``$STABLE_EXPLORE_LOCK_TIMEOUT`` seconds, else 300); then ``LockTimeoutError``.
    allow_empty:
        Publish a version of no rows (and make it ``latest``), with an ``EmptyBuildWarning`` (True,
        the default); False refuses with ``EmptyBuildError`` and publishes nothing. Not part of
        the cache decision.
    """

    description: str | None = None
    license: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    shard_size: int | str = "256MB"
    batch_size: int = 1000
    compression: str | None = None
    batched: bool = False
    tag: str | None = None
    force: bool = False
    key: str | None = None
    message: str | None = None
    ignore: tuple[str, ...] = ()
    watch: tuple[str | os.PathLike[str], ...] = ()
    check_content: bool = False
    num_proc: int | None = None
    executor: Executor | None = field(default=None, compare=False)
    lock_timeout: float | None = None
    allow_empty: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "ignore", _names(self.ignore, "ignore"))
        object.__setattr__(self, "watch", _paths(self.watch))
        object.__setattr__(self, "metadata", dict(self.metadata or {}))
        check_metadata(self.metadata)
        try:
            canonical_json(self.metadata)
        except (TypeError, ValueError) as exc:
            msg = f"metadata must be JSON-serialisable (str, numbers, lists, dicts): {exc}"
            raise InvalidArgumentTypeError(msg) from exc
        for what in ("description", "license", "message", "metadata"):
            problem = unencodable_text(getattr(self, what))
            if problem:
                msg = f"{what} cannot be stored as UTF-8 ({problem}); clean the text first"
                raise InvalidOptionError(msg)
        if self.tag is not None:
            check_name(self.tag, "tag")
        if self.compression not in COMPRESSIONS:
            msg = f"compression must be one of {COMPRESSIONS}, got {self.compression!r}"
            raise InvalidOptionError(msg)
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            msg = f"batch_size must be a positive int, got {self.batch_size!r}"
            raise InvalidOptionError(msg)
        if not isinstance(self.batched, bool):
            msg = f"batched must be True or False, got {self.batched!r}"
            raise InvalidArgumentTypeError(msg)
        if self.lock_timeout is not None and (
            isinstance(self.lock_timeout, bool)
            or not isinstance(self.lock_timeout, (int, float))
            or not self.lock_timeout >= 0
        ):
            msg = f"lock_timeout must be a number of seconds >= 0 (or None to wait), got {self.lock_timeout!r}"
            raise InvalidOptionError(msg)
        if not isinstance(self.allow_empty, bool):
            msg = f"allow_empty must be True or False, got {self.allow_empty!r}"
            raise InvalidArgumentTypeError(msg)
        parse_size(self.shard_size)  # a clear error now, not after the generator ran
        if self.num_proc is not None and (
            isinstance(self.num_proc, bool) or not isinstance(self.num_proc, int) or self.num_proc < 1
        ):
            msg = f"num_proc must be a positive int (or None for a serial build), got {self.num_proc!r}"
            raise InvalidOptionError(msg)
        if self.batched and (self.executor is not None or (self.num_proc or 1) > 1):
            msg = (
                "batched=True builds serially: a parallel build (num_proc, executor) reads rows; "
                "yield rows from the tasks, or build the batches without num_proc"
            )
            raise InvalidOptionError(msg)
        if self.executor is not None and not isinstance(self.executor, Executor):
            msg = (
                f"executor must be a concurrent.futures.Executor (a ProcessPoolExecutor, a Dask client's "
                f"get_executor(), Ray's), got {type(self.executor).__name__}"
            )
            raise InvalidArgumentTypeError(msg)

    @property
    def parallel(self) -> bool:
        """Whether the build runs in tasks: ``executor`` given, or ``num_proc`` above 1 (``num_proc=1`` is serial)."""
        return self.executor is not None or (self.num_proc or 1) > 1

    @property
    def shard_size_bytes(self) -> int:
        """``shard_size`` in bytes."""
        return parse_size(self.shard_size)

    @property
    def descriptive(self) -> dict[str, Any]:
        """The fields that describe the data without changing its rows: description, license, metadata."""
        return {"description": self.description, "license": self.license, "metadata": dict(self.metadata)}


# The BuildOptions fields a command line can give, by the same name (``--shard-size`` is ``shard_size``)
_ARGUMENT_FIELDS = (
    "description",
    "license",
    "shard_size",
    "batch_size",
    "compression",
    "batched",
    "tag",
    "force",
    "key",
    "ignore",
    "watch",
    "check_content",
    "num_proc",
    "lock_timeout",
)


def options_from_args(args: argparse.Namespace, **given: Any) -> BuildOptions:
    """The build options parsed command-line arguments give: the CLI's ``build`` and ``%stable_cache`` alike.

    Parameters
    ----------
    args:
        The parsed arguments; each field of :class:`BuildOptions` that the parser defines is read
        (the others keep their defaults).
    **given:
        Fields the caller works out itself, such as the magic's ``metadata`` (a notebook variable).

    Returns
    -------
    BuildOptions
        Checked once, as ``se.build`` checks its keywords.

    Examples
    --------
    >>> import argparse
    >>> options = options_from_args(argparse.Namespace(shard_size="64MB", tag="raw", quiet=True))
    >>> options.shard_size_bytes, options.tag
    (67108864, 'raw')
    """
    values: dict[str, Any] = {name: getattr(args, name) for name in _ARGUMENT_FIELDS if hasattr(args, name)}
    for many in ("ignore", "watch"):
        if many in values:
            values[many] = tuple(values[many] or ())
    return BuildOptions(**{**values, **given})


def _names(value: str | Iterable[str] | None, what: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else list(value or ())
    for item in items:
        if not isinstance(item, str) or not item.isidentifier():
            msg = f"{what} takes names of arguments or variables, got {item!r}"
            raise InvalidArgumentTypeError(msg)
    return tuple(items)


def _paths(value: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None) -> tuple[str, ...]:
    items = [value] if isinstance(value, (str, os.PathLike)) else list(value or ())
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            msg = f"watch takes file or folder paths, got {item!r}"
            raise InvalidArgumentTypeError(msg)
    return tuple(os.fspath(item) for item in items)


def check_metadata(metadata: object, what: str = "metadata") -> None:
    """Refuse user metadata nested deeper than JSON tools can take, naming where (see ``nested_too_deep``).

    Raises
    ------
    InvalidArgumentTypeError
        A ``TypeError``: the path of the first value too deep, and the limit.

    Examples
    --------
    >>> check_metadata({"a": {"b": 1}})
    >>> check_metadata({"a": [[1]]}, "note") is None
    True
    """
    problem = nested_too_deep(metadata)
    if problem is not None:
        msg = f"{what}{problem}; metadata must be JSON of plain values, lists and dicts, flatter than this"
        raise InvalidArgumentTypeError(msg)
