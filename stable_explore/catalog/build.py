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
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stable_explore.catalog.names import LATEST, check_name
from stable_explore.catalog.plan import SourcePlan, explain_changes, plan_source
from stable_explore.catalog.publish import publish_version
from stable_explore.schema import Features
from stable_explore.storage.fsutil import temp_dir_beside
from stable_explore.storage.metadata import VersionMetadata
from stable_explore.storage.writer import write_shards

if TYPE_CHECKING:
    from stable_explore.catalog.catalog import Catalog, VersionRef
    from stable_explore.catalog.options import BuildOptions
    from stable_explore.storage.shards import BatchCallback

__all__ = ["BuildResult", "ProgressFactory", "build_version"]

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


def build_version(
    catalog: Catalog,
    name: str,
    source: Any,
    features: Features | Mapping[str, Any],
    options: BuildOptions,
    *,
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    plan: SourcePlan | None = None,
    progress: ProgressFactory | None = None,
) -> BuildResult:
    """Reuse the version this source built before, or build and publish a new one.

    ``plan`` overrides how the source is fingerprinted (the magic passes a cell's plan);
    ``progress`` shows the rows written (the API passes a tqdm bar).
    """
    started = time.perf_counter()
    check_name(name)
    if not isinstance(features, Features):
        features = Features(features)
    if plan is None:
        plan = plan_source(source, features, options, args=args, kwargs=kwargs)

    previous = catalog.read_ref(name, LATEST) if catalog.version_ids(name) else None

    def reuse(version_id: str, why: str) -> BuildResult:
        if previous != version_id:  # a hit on the latest version writes nothing
            catalog.write_ref(name, LATEST, version_id)
        if options.tag:
            catalog.write_ref(name, options.tag, version_id)
        return BuildResult(catalog.ref(name, version_id), True, why, time.perf_counter() - started)

    if plan.fingerprint is not None and not options.force:
        hit = catalog.lookup_source(name, plan.fingerprint)
        if hit is not None:
            return reuse(hit, "reused: same source, arguments and features")

    lock = catalog.build_lock(name, plan.fingerprint) if plan.fingerprint else contextlib.nullcontext()
    with lock:
        if plan.fingerprint is not None and not options.force:
            hit = catalog.lookup_source(name, plan.fingerprint)
            if hit is not None:
                return reuse(hit, "reused: built by another process while this one waited")
        changes: list[str] = []
        if options.force:
            why = "rebuilt: force=True"
        elif plan.fingerprint is None:
            why = "built: a plain iterable has no fingerprint (pass key= to reuse it next time)"
        elif previous is None:
            why = f"built: first build of {name}"
        else:
            old_parts = catalog.version_meta(name, previous).version_metadata.source
            changes = explain_changes(old_parts, plan.parts)
            why = "rebuilt: " + ("; ".join(changes) if changes else "no earlier build of this source")
        examples = source(*args, **(kwargs or {})) if callable(source) else source
        total = len(examples) if hasattr(examples, "__len__") else None
        with (
            temp_dir_beside(catalog.versions_dir(name) / "staging") as staging,
            progress(name, total) if progress is not None else contextlib.nullcontext() as on_batch,
        ):
            shard_fields = write_shards(
                examples,
                features,
                staging,
                shard_size_bytes=options.shard_size_bytes,
                batch_size=options.batch_size,
                compression=options.compression,
                on_batch=on_batch,
            )
            record = VersionMetadata(
                source_fingerprint=plan.fingerprint,
                source=plan.parts,
                description=options.description,
                license=options.license,
                metadata=options.metadata,
                message=options.message,
            )
            published = publish_version(catalog, name, staging, shard_fields, record, tag=options.tag)
        if published.existed:
            why += " (identical content: reusing the existing version)"
        if plan.fingerprint is not None:
            catalog.record_source(name, plan.fingerprint, published.ref.version_id)
    return BuildResult(published.ref, False, why, time.perf_counter() - started, changes)
