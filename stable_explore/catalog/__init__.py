"""The catalog: names -> versions under one home, refs and tags, cache decisions, builds, publishing, gc.

The core is flat: ``catalog`` (a home's datasets, versions, refs and locks), ``names``, ``options`` (and
``build_arguments``, their command-line flags), ``plan`` (the cache decision), ``build``, ``publish``,
``listing``, ``remote`` (a home in a bucket), ``transfer`` (push and pull) and ``latest_seen``. Three folders
hold the rest: ``parallel/`` (parallel builds and the pools of workers), ``fingerprints/`` (what a build
reads, hashed for the cache decision) and ``maintenance/`` (fsck and gc).

Nothing here imports the dataset, display or UI layers; those call down into these modules. Each name
below is imported from its module when first used, so ``from stable_explore.catalog import resolve_home``
imports ``names`` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stable_explore._lazy import lazy_exports

if TYPE_CHECKING:  # the names themselves, for type checkers; at run time each imports when first used
    from stable_explore.catalog.build import (
        BuildResult,
        ProgressFactory,
        build_version,
        failure_note,
        failure_note_of,
        pop_failure_note,
    )
    from stable_explore.catalog.catalog import Catalog, StoreCatalog, VersionRef
    from stable_explore.catalog.listing import (
        DATASET_COLUMNS,
        VERSION_COLUMNS,
        dataset_columns,
        dataset_rows,
        version_rows,
    )
    from stable_explore.catalog.maintenance.fsck import FsckReport, fsck
    from stable_explore.catalog.maintenance.gc import GcReport, collect_garbage
    from stable_explore.catalog.names import (
        HOME_ENV,
        LATEST,
        check_name,
        is_url,
        locate_ref,
        open_store,
        resolve_home,
        split_url_ref,
    )
    from stable_explore.catalog.options import BuildOptions, options_from_args
    from stable_explore.catalog.plan import SourcePlan, explain_changes, plan_map, plan_source
    from stable_explore.catalog.publish import Published, publish_version
    from stable_explore.catalog.remote import RemoteCatalog, home_of, open_catalog
    from stable_explore.catalog.transfer import TransferReport, copy_version, version_nbytes

# Each name and its module, imported when first used: ``stable-explore --help``, ``%load_ext`` and a build's
# options reach ``catalog.build_arguments`` / ``catalog.options`` without importing the whole catalog, pyarrow
# and numpy (issue 39). Keep it the same as the imports above (tests/test_import_time.py checks).
_LAZY = {
    **dict.fromkeys(
        ["BuildResult", "ProgressFactory", "build_version", "failure_note", "failure_note_of", "pop_failure_note"],
        ".build",
    ),
    **dict.fromkeys(["Catalog", "StoreCatalog", "VersionRef"], ".catalog"),
    **dict.fromkeys(
        ["DATASET_COLUMNS", "VERSION_COLUMNS", "dataset_columns", "dataset_rows", "version_rows"], ".listing"
    ),
    **dict.fromkeys(["FsckReport", "fsck"], ".maintenance.fsck"),
    **dict.fromkeys(["GcReport", "collect_garbage"], ".maintenance.gc"),
    **dict.fromkeys(
        ["HOME_ENV", "LATEST", "check_name", "is_url", "locate_ref", "open_store", "resolve_home", "split_url_ref"],
        ".names",
    ),
    **dict.fromkeys(["BuildOptions", "options_from_args"], ".options"),
    **dict.fromkeys(["SourcePlan", "explain_changes", "plan_map", "plan_source"], ".plan"),
    **dict.fromkeys(["Published", "publish_version"], ".publish"),
    **dict.fromkeys(["RemoteCatalog", "home_of", "open_catalog"], ".remote"),
    **dict.fromkeys(["TransferReport", "copy_version", "version_nbytes"], ".transfer"),
}
if not TYPE_CHECKING:  # hidden from type checkers: to them a name not imported above is a typo
    __getattr__, __dir__ = lazy_exports(
        __name__,
        _LAZY,
        # its modules, reached as attributes as when this imported them all (``catalog.remote.open_catalog``)
        (
            "build",
            "build_arguments",
            "catalog",
            "fingerprints",
            "latest_seen",
            "listing",
            "maintenance",
            "names",
            "options",
            "parallel",
            "plan",
            "publish",
            "remote",
            "transfer",
        ),
    )

__all__ = [
    "DATASET_COLUMNS",
    "HOME_ENV",
    "LATEST",
    "VERSION_COLUMNS",
    "BuildOptions",
    "options_from_args",
    "BuildResult",
    "Catalog",
    "FsckReport",
    "GcReport",
    "ProgressFactory",
    "Published",
    "RemoteCatalog",
    "SourcePlan",
    "StoreCatalog",
    "TransferReport",
    "VersionRef",
    "build_version",
    "check_name",
    "collect_garbage",
    "copy_version",
    "dataset_columns",
    "dataset_rows",
    "explain_changes",
    "is_url",
    "locate_ref",
    "open_store",
    "failure_note",
    "failure_note_of",
    "pop_failure_note",
    "fsck",
    "home_of",
    "open_catalog",
    "plan_map",
    "plan_source",
    "publish_version",
    "resolve_home",
    "split_url_ref",
    "version_nbytes",
    "version_rows",
]
