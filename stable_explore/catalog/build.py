"""Builds: reuse the version a source built before, or run the generator, write shards and publish a version.

Examples
--------
>>> import tempfile
>>> from stable_explore import Features, Value
>>> from stable_explore.catalog import BuildOptions, Catalog
>>> def numbers(n):
...     yield from ({"x": i} for i in range(n))
>>> catalog = Catalog(tempfile.mkdtemp())
>>> build_version(catalog, "numbers", numbers, Features(x=Value("int64")), BuildOptions(), args=(3,)).info
'built: first build of numbers'
>>> build_version(catalog, "numbers", numbers, Features(x=Value("int64")), BuildOptions(), args=(3,)).reused
True
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stable_explore.catalog.catalog import warn_lock_wait
from stable_explore.catalog.fingerprints.code_tokens import user_stacklevel
from stable_explore.catalog.fingerprints.file_state import LISTINGS, Entry, read_listing, write_listing
from stable_explore.catalog.names import LATEST, check_name
from stable_explore.catalog.parallel.executor import ParallelBuild
from stable_explore.catalog.plan import SourcePlan, explain_changes, plan_source
from stable_explore.catalog.publish import UNMOVED_MARK, publish_version
from stable_explore.errors import (
    EmptyBuildError,
    EmptyBuildWarning,
    InvalidArgumentTypeError,
    UnfingerprintableWarning,
)
from stable_explore.schema import Features
from stable_explore.storage.backends.fsutil import remove_empty_folders, temp_dir_beside
from stable_explore.storage.backends.locks import waiting_at_most
from stable_explore.storage.format.cache_meta import PLAIN_FORMAT_REVISION
from stable_explore.storage.format.metadata import VersionMetadata
from stable_explore.storage.write.column_batches import batch_rows, is_column_batch
from stable_explore.storage.write.writer import RowsRead, write_shards

if TYPE_CHECKING:
    from pathlib import Path

    from stable_explore.catalog.catalog import Catalog, VersionRef
    from stable_explore.catalog.options import BuildOptions
    from stable_explore.storage.write.shards import BatchCallback

__all__ = ["BuildResult", "ProgressFactory", "build_version", "failure_note", "failure_note_of"]

ProgressFactory = Callable[[str, "int | None"], AbstractContextManager["BatchCallback | None"]]
"""Makes a progress display for (the dataset's name, rows expected or None); it yields the writer's batch callback."""


@dataclass
class BuildResult:
    """What a build returned: the version, and why it was reused or (re)built."""

    ref: VersionRef
    reused: bool
    info: str
    seconds: float = 0.0
    changes: list[str] = field(default_factory=list)


_warned: set[tuple[str, str]] = set()
_LISTING_LIMIT = 500_000  # listings kept to explain a rebuild; a bigger folder's rebuild gives counts only
FAILURE_MARK = "nothing was saved;"


def build_version(
    catalog: Catalog,
    name: str,
    source: object,
    features: Features | Mapping[str, object],
    options: BuildOptions,
    *,
    args: tuple[object, ...] = (),
    kwargs: Mapping[str, object] | None = None,
    plan: SourcePlan | None = None,
    progress: ProgressFactory | None = None,
) -> BuildResult:
    """Reuse the version this source built before, or build and publish a new one.

    ``plan`` overrides how the source is fingerprinted (the magic passes a cell's plan);
    ``progress`` shows the rows written (the API passes a tqdm bar). A hit returns the version
    the source built and moves no ref (``latest`` stays the most recently created version); a
    build moves ``latest`` to what it made. A source with an input that has no content hash
    builds every time, with a warning (once per process) that names the input.

    If the build fails, the error carries a note: how many rows were read, that nothing was
    saved, and which version is still the latest.

    ``options.lock_timeout`` bounds the wait for each lock the build takes: the build lock, the
    dataset's refs lock, a bucket's leases.
    """
    with waiting_at_most(options.lock_timeout):
        return _build_version(
            catalog, name, source, features, options, args=args, kwargs=kwargs, plan=plan, progress=progress
        )


def _build_version(
    catalog: Catalog,
    name: str,
    source: object,
    features: Features | Mapping[str, object],
    options: BuildOptions,
    *,
    args: tuple[object, ...],
    kwargs: Mapping[str, object] | None,
    plan: SourcePlan | None,
    progress: ProgressFactory | None,
) -> BuildResult:
    started = time.perf_counter()
    check_name(name)
    if options.tag:  # a tag that cannot move fails now, not after the generator ran
        catalog.check_ref_movable(name, options.tag)
    if not isinstance(features, Mapping):
        msg = (
            f"features must be a stable_explore.Features (or a dict of column name -> feature type) describing "
            f"each example, got {type(features).__name__}: for example se.Features(image=se.Image(), "
            f"label=se.ClassLabel(names=[...])); se.from_pandas and se.from_parquet infer them from a table"
        )
        raise InvalidArgumentTypeError(msg)
    if not isinstance(features, Features):
        features = Features(features)
    if plan is None:
        plan = plan_source(source, features, options, args=args, kwargs=kwargs, home=catalog.home)
    # split now, so that arguments a parallel build cannot split fail whether or not the cache has the source
    parallel = ParallelBuild(source, features, options, args=args, kwargs=kwargs) if options.parallel else None

    previous = catalog.read_ref(name, LATEST) if catalog.version_ids(name) else None
    decides = plan.fingerprint is not None and not plan.unstable
    hit_reason = (
        f"reused: key {options.key!r}" if options.key is not None else "reused: same source, arguments and features"
    )

    def reuse(version_id: str, why: str) -> BuildResult:
        if options.tag:  # refs move last, latest at the very end
            catalog.write_ref(name, options.tag, version_id)
        if previous is None:  # only when no ref exists at all; a hit never moves latest
            catalog.write_ref(name, LATEST, version_id)
        return BuildResult(catalog.ref(name, version_id), True, why, time.perf_counter() - started)

    if decides and not options.force:
        assert plan.fingerprint is not None
        hit = catalog.reuse_source(name, plan.fingerprint)
        if hit is not None:
            return reuse(hit, hit_reason)
    if plan.unstable:
        _warn_once(name, plan)

    lock = (
        catalog.build_lock(name, plan.fingerprint, timeout=options.lock_timeout, notify=warn_lock_wait)
        if decides and plan.fingerprint
        else contextlib.nullcontext()
    )
    with _tidy_after_a_failed_first_build(lock, catalog.versions_dir(name), first=previous is None):
        if decides and not options.force:
            assert plan.fingerprint is not None
            hit = catalog.reuse_source(name, plan.fingerprint)
            if hit is not None:
                return reuse(hit, "reused: built by another process while this one waited")
        changes: list[str] = []
        earlier = _last_build(catalog, name, previous)
        if options.force:
            why = "rebuilt: force=True"
        elif plan.fingerprint is None:
            why = "built: a plain iterable has no fingerprint (pass key= to reuse it next time)"
        elif plan.unstable:
            why = ("rebuilt: " if previous else "built: ") + plan.advice()
        elif earlier is None:
            why = f"built: first build of {name}" if previous is None else "built: no earlier build of this source"
        else:
            changes = _explain(catalog, name, earlier, plan, features, options)
            why = "rebuilt: " + ("; ".join(changes) if changes else "no earlier build of this source")
        counter = RowsRead()
        try:
            examples: Any = None if parallel else source(*args, **(kwargs or {})) if callable(source) else source
            if is_column_batch(examples, batched=options.batched):  # one batch (a table, a DataFrame) as the source
                examples = [examples]
            total = _rows_expected(examples, options.batched)
            with (
                temp_dir_beside(catalog.versions_dir(name) / "staging") as staging,
                progress(name, total) if progress is not None else contextlib.nullcontext() as on_batch,
            ):
                if parallel is not None:
                    shard_fields = parallel.run(staging, on_batch)
                else:
                    shard_fields = write_shards(
                        examples,
                        features,
                        staging,
                        shard_size_bytes=options.shard_size_bytes,
                        batch_size=options.batch_size,
                        compression=options.compression,
                        on_batch=on_batch,
                        batched=options.batched,
                        rows_read=counter,
                    )
                if shard_fields["num_rows"] == 0 and not options.allow_empty:
                    raise EmptyBuildError(_empty_refused(name, previous))
                record = VersionMetadata(
                    source_fingerprint=plan.fingerprint if decides else None,
                    source=plan.parts,
                    description=options.description,
                    license=options.license,
                    metadata=options.metadata,
                    message=options.message,
                )
                published = publish_version(catalog, name, staging, shard_fields, record, tag=options.tag)
        except EmptyBuildError:
            raise  # its message already says that nothing was published and which version stays latest
        except BaseException as exc:
            _add_note(exc, failure_note(name, previous, parallel.rows if parallel else counter.rows))
            raise
        if published.existed:
            why += " (identical content: reusing the existing version)"
        if shard_fields["num_rows"] == 0:
            _warn_empty(name, published.ref.version_id, previous)
        # the source record was written with the version, before latest moved; a file listing only explains a
        # later rebuild: failing to write one must not fail a build whose version is published
        with contextlib.suppress(OSError):
            for state in plan.file_states:
                if state.files <= _LISTING_LIMIT:
                    write_listing(catalog.sources_dir(name) / LISTINGS, state)
    return BuildResult(published.ref, False, why, time.perf_counter() - started, changes)


def _rows_expected(examples: object, batched: bool) -> int | None:
    """How many rows a source will give, for the progress bar: a list's length (its batches' rows), or None."""
    if not hasattr(examples, "__len__"):
        return None
    if isinstance(examples, (list, tuple)) and examples and is_column_batch(examples[0], batched=batched):
        if all(is_column_batch(item, batched=batched) for item in examples):
            return sum(batch_rows(item) for item in examples)
        return None
    return len(examples)


@contextlib.contextmanager
def _tidy_after_a_failed_first_build(lock: Any, versions_dir: Path, *, first: bool) -> Iterator[None]:
    """Hold ``lock``; if the first build of a dataset fails, leave no empty dataset folder behind to list.

    The folders are removed after the lock is let go (its file may sit beside them), and only
    while empty.
    """
    try:
        with lock:
            yield
    except BaseException:
        if first:
            remove_empty_folders(versions_dir, levels=2)
        raise


def failure_note(name: str, latest: str | None, rows: int) -> str:
    """What a failed or interrupted build leaves: "N rows were read; nothing was saved; NAME@ID is kept ..."."""
    kept = f"{name}@{latest} is kept as the latest version" if latest else f"no version of {name} existed before"
    read = "1 row was read" if rows == 1 else f"{rows:,} rows were read"
    return f"{read}; {FAILURE_MARK} {kept}"


def failure_note_of(error: BaseException) -> str | None:
    """The note :func:`build_version` added to a build's error, if it has one.

    That is what the build left: nothing saved, or (when its refs failed to move) a version in
    place that no ref names yet.
    """
    notes = getattr(error, "__notes__", None) or []
    return next((note for note in reversed(notes) if FAILURE_MARK in note or UNMOVED_MARK in note), None)


def pop_failure_note(error: BaseException) -> str | None:
    """Take :func:`build_version`'s note off the error (for a front door that says it in its own first line)."""
    note = failure_note_of(error)
    if note is not None:
        getattr(error, "__notes__", []).remove(note)  # failure_note_of found it there
    return note


def _add_note(error: BaseException, note: str) -> None:
    add = getattr(error, "add_note", None)  # Python 3.11+
    if add is not None and failure_note_of(error) is None:
        add(note)


def _warn_once(name: str, plan: SourcePlan) -> None:
    """Warn, once per process and input, that a build cannot be recognised next time."""
    fresh = [label for label in sorted(plan.unstable) if (name, label) not in _warned]
    if not fresh:
        return
    _warned.update((name, label) for label in fresh)
    message = f"{name}: {plan.advice()}"
    warnings.warn(message, UnfingerprintableWarning, stacklevel=user_stacklevel())


def _empty_refused(name: str, previous: str | None) -> str:
    """Why a build of no rows published nothing (``allow_empty=False``), and how to publish it anyway."""
    kept = f"{name}@{previous[:12]} stays the latest" if previous else f"{name} has no version yet"
    return (
        f"{name}: the source yielded no rows, so nothing was published ({kept}). Check the source's arguments: "
        "a path that names no file or folder yields nothing. To publish an empty version and make it the latest, "
        "pass allow_empty=True (stable-explore build --allow-empty)"
    )


def _warn_empty(name: str, version_id: str, previous: str | None) -> None:
    """Say that a build published no rows, and where the version before it is."""
    message = f"{name}: the source yielded no rows, so {name}@{version_id[:12]} is empty and is now the latest"
    if previous is not None and previous != version_id:
        message += f"; the version before it stays available: se.load({f'{name}@{previous[:12]}'!r})"
    message += ". Check the source's arguments: a path that names no file or folder yields nothing"
    warnings.warn(message, EmptyBuildWarning, stacklevel=user_stacklevel())


def _last_build(catalog: Catalog, name: str, latest: str | None) -> VersionMetadata | None:
    """The newest build record behind ``latest``: latest itself, or the build a chain of saves started from."""
    version_id, hops = latest, 0
    while version_id and hops < 1000:
        try:
            record = catalog.version_meta(name, version_id).version_metadata
        except (OSError, ValueError):
            return None
        if record.source and record.source.get("kind") != "map":  # a map's record is no build of this source
            return record
        version_id, hops = record.parent, hops + 1
    return None


def _explain(
    catalog: Catalog, name: str, earlier: VersionMetadata, plan: SourcePlan, features: Features, options: BuildOptions
) -> list[str]:
    listings = {state.digest: state.entries for state in plan.file_states}
    directory = catalog.sources_dir(name) / LISTINGS

    def listing(digest: str) -> Mapping[str, Entry] | None:
        return listings[digest] if digest in listings else read_listing(directory, digest)

    old_features: Mapping[str, object] | None = None
    revision = PLAIN_FORMAT_REVISION
    with contextlib.suppress(OSError, ValueError):
        stored_meta = catalog.version_meta(name, earlier.version_id or "")
        revision = stored_meta.format_revision
        old_features = stored_meta.features.to_dict() if stored_meta.features is not None else None
    if revision < PLAIN_FORMAT_REVISION:
        # Its source record was fingerprinted by an older release, in ways this one does not: the parts
        # cannot be compared, and naming them ("argument 'root' changed") would accuse the user's inputs.
        return [
            f"the earlier build ({name}@{earlier.version_id}, format revision {revision}) was recorded by an older "
            "stable-explore, whose source fingerprints this release does not compare; it stays readable, and "
            "the next build of this source is recognised"
        ]
    old_descriptive = {"description": earlier.description, "license": earlier.license, "metadata": earlier.metadata}
    return explain_changes(
        earlier.source,
        plan.parts,
        listing=listing,
        features=(old_features, features.to_dict()) if old_features is not None else None,
        descriptive=(old_descriptive, options.descriptive),
    )
