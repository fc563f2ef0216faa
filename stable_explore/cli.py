"""The ``stable-explore`` command: ls, show, versions, diff, verify, gc, export, tag, build, push, pull, fsck.

Exit status: 0 on success; 1 when stable-explore reports a problem (a dataset, version or tag
that does not exist, a damaged file, bad input from a generator); 2 on a usage error; 130
when interrupted (nothing half-written is left behind).

Examples
--------
::

    stable-explore ls
    stable-explore show pets@clean
    stable-explore versions pets
    stable-explore diff pets@1a2b pets@latest --json
    stable-explore verify pets pets@raw
    stable-explore fsck
    stable-explore gc --keep 2
    stable-explore export pets@clean --to pets.parquet
    stable-explore build mygens:pets --features mygens:FEATURES --name pets --arg data/pets
    stable-explore build mygens:pets_from --features mygens:FEATURES --list files data/pets/*.jpg --num-proc 4
    stable-explore push pets@clean s3://team-bucket/cache
    stable-explore pull s3://team-bucket/cache/pets@clean
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import os
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from stable_explore import __version__, api
from stable_explore._units import format_size
from stable_explore.api._user_errors import raised_in_user_code, trimmed_traceback
from stable_explore.catalog.build_arguments import BUILD_ARGUMENTS
from stable_explore.catalog.names import HOME_ENV, resolve_home
from stable_explore.dataset._formats import FILE_LAYOUTS, export_layout
from stable_explore.errors import CacheNotFoundError, InvalidOptionError, StableExploreError, StableExploreWarning

__all__ = ["main"]

EXIT_PROBLEM = 1
EXIT_INTERRUPTED = 130
_EXPORT_FORMATS = tuple(FILE_LAYOUTS.values())
_REF_HELP = "a version: NAME (latest), NAME@TAG, NAME@ID-PREFIX, or s3://bucket/prefix/NAME@..."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stable-explore",
        description="Cached datasets: list, inspect, compare, verify, export, build.",
        epilog="Exit status: 0 ok, 1 a problem stable-explore reports, 2 a usage error, 130 interrupted.",
    )
    parser.add_argument("--home", help="the catalog root (default $STABLE_EXPLORE_HOME or ~/.cache/stable-explore)")
    parser.add_argument("--version", action="version", version=f"stable-explore {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    ls = commands.add_parser("ls", help="datasets, or the versions of one (of a bucket: ls s3://bucket/prefix)")
    ls.add_argument("name", nargs="?", help="a dataset: list its versions (default: list every dataset)")
    show = commands.add_parser("show", help="one version: size, schema, label counts, lineage")
    show.add_argument("ref", help=_REF_HELP)
    versions = commands.add_parser("versions", help="every version of a dataset, newest first")
    versions.add_argument("name", help="the dataset's name")
    diff = commands.add_parser("diff", help="what changed from version A to version B")
    diff.add_argument("a", help="the version before (" + _REF_HELP + ")")
    diff.add_argument("b", help="the version after")
    diff.add_argument("--json", action="store_true", help="the machine-readable form")
    verify = commands.add_parser("verify", help="re-hash every shard of versions (exit 1 if any is damaged)")
    verify.add_argument("refs", nargs="+", metavar="REF", help="versions to check (" + _REF_HELP + ")")
    fsck = commands.add_parser("fsck", help="check every version, ref and source record (exit 1 on any problem)")
    fsck.add_argument("name", nargs="?", help="only this dataset")
    gc = commands.add_parser("gc", help="delete untagged versions beyond the newest")
    gc.add_argument("name", nargs="?", help="only this dataset (default: every dataset)")
    gc.add_argument("--keep", type=int, default=1, help="newest versions to keep per dataset (default 1)")
    export = commands.add_parser("export", help="write a version to Parquet, CSV or JSON")
    export.add_argument("ref", help=_REF_HELP)
    export.add_argument("--to", required=True, type=Path, help="output file (.parquet, .csv, .jsonl or .json)")
    export.add_argument("--format", choices=_EXPORT_FORMATS, help="the file format (default: from --to's suffix)")
    tag = commands.add_parser("tag", help="point a tag at a version")
    tag.add_argument("ref", help=_REF_HELP)
    tag.add_argument("tag", help="the tag's name (moved if it exists)")
    push = commands.add_parser("push", help="copy a version to another home (s3://bucket/prefix or a folder)")
    push.add_argument("ref", help=_REF_HELP)
    push.add_argument("to", metavar="HOME", help="where to copy it: s3://bucket/prefix or a folder")
    pull = commands.add_parser("pull", help="bring a version from another home: s3://bucket/prefix/NAME[@VERSION]")
    pull.add_argument("url", help="s3://bucket/prefix/NAME[@VERSION]: the version to bring into --home")
    for command in (push, pull):
        command.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    for command in (gc, tag, push, pull):
        command.add_argument(
            "--lock-timeout",
            type=float,
            metavar="SECONDS",
            help="give up after waiting this long for a dataset's refs lock (default: "
            "$STABLE_EXPLORE_LOCK_TIMEOUT, else 300)",
        )
    build = commands.add_parser("build", help="cache a generator function from a Python module (MODULE:FUNC)")
    build.add_argument("source", metavar="MODULE:FUNC", help="the generator function, e.g. mygens:pets")
    build.add_argument("--features", required=True, metavar="MODULE:VAR", help="the Features, e.g. mygens:FEATURES")
    build.add_argument("--name", help="the dataset's name (default: FUNC)")
    build.add_argument("--arg", action="append", default=[], metavar="VALUE", help="a positional argument (text)")
    build.add_argument(
        "--list",
        nargs="+",
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="a keyword argument NAME given as a list of text values (split into tasks by --num-proc)",
    )
    build.add_argument(
        "--num-proc",
        type=int,
        metavar="K",
        help="build on K processes: the --list arguments are split into K tasks (same version id as serial)",
    )
    for flags, options in BUILD_ARGUMENTS:  # the options %stable_cache takes too, by the same names
        build.add_argument(*flags, **options)
    build.add_argument(
        "--allow-empty",
        action="store_true",
        help="publish a version of no rows and make it latest (default: refuse, exit 1, publish nothing)",
    )
    build.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    return parser


def _show(ref: str, home: str | None) -> str:
    ds = api.load(ref, home=home)
    lines = [repr(ds)]
    meta = ds.metadata
    for label, key in (("description", "description"), ("license", "license"), ("created", "created_at")):
        if meta.get(key):
            lines.append(f"{label}: {meta[key]}")
    if meta.get("message"):
        lines.append(f"message: {meta['message']}")
    if meta.get("parent"):
        lines.append(f"parent: {meta['parent']}  ({_parent_said(ds.name, meta['parent'], home)})")
    lines.append("columns:")
    lines.extend(f"  {name}: {feature!r}" for name, feature in ds.features.items())
    try:
        counts = ds.label_counts()
    except KeyError:
        counts = {}
    if counts:
        lines.append("labels: " + ", ".join(f"{name} {count:,}" for name, count in counts.items()))
    lines.append(f"shards: {ds.num_shards} ({format_size(ds.nbytes)}) in {ds.cache_dir}")
    return "\n".join(lines)


def _parent_said(name: str | None, parent: str, home: str | None) -> str:
    """The parent version's own message (or how it was made), for ``show``'s lineage line."""
    try:
        meta = api.load(f"{name}@{parent}", home=home).metadata
    except CacheNotFoundError:
        # all that is known: it is not here (gc may have removed it, or it was made elsewhere and never copied here)
        return "not in this home: removed by gc, or never pushed or pulled here"
    except StableExploreError as exc:
        return f"not readable: {exc}"
    if meta.get("message"):
        return str(meta["message"])
    return "a build" if not meta.get("parent") else "no message"


def _attribute(spec: str, what: str) -> Any:
    """``module:name`` -> that attribute, importing the module from the current directory first."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        msg = f"{what} must be MODULE:NAME (e.g. mygens:pets), got {spec!r}"
        raise InvalidOptionError(msg)
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # a module beside the user, as `python -m` would find it
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        msg = f"{what}: cannot import module {module_name!r} ({exc})"
        raise InvalidOptionError(msg) from exc
    try:
        return getattr(module, attribute)
    except AttributeError:
        msg = f"{what}: module {module_name!r} has no {attribute!r}"
        raise InvalidOptionError(msg) from None


def _verify(refs: list[str], home: str | None) -> int:
    """Verify every ref (not only up to the first bad one); exit 1 if any failed."""
    status = 0
    for ref in refs:
        try:
            print(f"{ref}: {api.verify(ref, home=home)}")
        except StableExploreError as exc:
            print(f"stable-explore verify: {exc}", file=sys.stderr)  # names the damaged file or the missing ref
            status = EXIT_PROBLEM
    return status


def _export_format(to: Path, file_format: str | None) -> str | None:
    """The export's file format: ``--format``, else the layout ``--to``'s suffix names (se.export's rule)."""
    try:
        return export_layout(to, file_format)
    except InvalidOptionError:
        return None


def _export(ref: str, to: Path, chosen: str, home: str | None) -> str:
    ds = api.load(ref, home=home)
    ds.export(to, layout=chosen)  # CSV and JSON: each row's key first, labels as names, images left out
    return f"wrote {len(ds):,} rows to {to}"


@contextlib.contextmanager
def _warnings_in_our_words(command: str) -> Iterator[None]:
    """Show stable-explore's warnings as ``stable-explore COMMAND: message`` lines, not as Python warning lines.

    Python's own format names the installed script's line (``stable-explore:8: EmptyBuildWarning ...
    sys.exit(main())``), which says nothing to someone at a shell. Other warnings keep Python's format.
    """
    with warnings.catch_warnings():  # puts showwarning back afterwards
        shown = warnings.showwarning

        def say(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: Any = None,
            line: str | None = None,
        ) -> None:
            if issubclass(category, StableExploreWarning):
                print(f"stable-explore {command}: {message}", file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = say
        warnings.simplefilter("always", StableExploreWarning)  # each said once, as it happens
        yield


def _build(args: argparse.Namespace, home: str | None) -> str:
    from stable_explore.catalog import open_catalog, options_from_args

    source = _attribute(args.source, "MODULE:FUNC")
    features = _attribute(args.features, "--features")
    lists: dict[str, list[str]] = {}
    for name, *values in args.list:
        if not name.isidentifier() or name in lists:
            msg = f"--list takes NAME VALUE...: {name!r} is not an argument name (or is given twice)"
            raise InvalidOptionError(msg)
        lists[name] = values
    options = dataclasses.replace(options_from_args(args), allow_empty=args.allow_empty)
    with _warnings_in_our_words("build"):
        ds = api.build_from_options(
            open_catalog(home),
            args.name,
            source,
            features,
            options,
            args=tuple(args.arg),
            kwargs=lists,
            progress=not args.quiet,
        )
    return f"{ds!r}\n{ds.build_info}"


def _gc(name: str | None, keep: int, home: str | None, lock_timeout: float | None = None) -> int:
    """Collect garbage, printing each version removed and leftover swept; exit 1 if a dataset was unreadable."""
    report = api.gc(name, keep=keep, home=home, lock_timeout=lock_timeout)
    for line in [*(f"removed {v}" for v in report.removed), *(f"swept {s}" for s in report.swept)]:
        print(line)
    for problem in report.problems:
        print(f"stable-explore gc: {problem}", file=sys.stderr)
    print(f"freed {format_size(report)}")
    return EXIT_PROBLEM if report.problems else 0


_CREATES_HOME = ("build", "pull")  # the commands that may make a home that is not there yet


def _missing_home(home: str | None, command: str) -> str | None:
    """Why a home named by ``--home`` or ``$STABLE_EXPLORE_HOME`` cannot be read (None if it can, or may be made).

    Without this, a mistyped ``--home`` listed "(none)" and exited 0, as if the home were empty.
    """
    named = home if home is not None else os.environ.get(HOME_ENV) or None
    if named is None or "://" in named or command in _CREATES_HOME:
        return None
    folder = resolve_home(named)
    if folder.is_dir():
        return None
    given = "--home" if home is not None else f"${HOME_ENV}"
    if folder.exists():
        return f"the home {folder} (from {given}) is a file, not a folder"
    return f"the home {folder} (from {given}) does not exist: check the path (a build or a pull creates a home)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    parser = _parser()
    args = parser.parse_args(argv)
    home = args.home
    if args.command == "export" and _export_format(args.to, args.format) is None:
        # A usage error (exit 2, with the usage line), found before anything is read.
        formats = ", ".join(_EXPORT_FORMATS)
        parser.error(f"export: cannot tell the format from {args.to.name!r}: give --format (one of {formats})")
    if args.command == "ls" and args.name and "://" in args.name:  # a home's URL: its datasets
        home, args.name = args.name, None
    missing = _missing_home(home, args.command)
    if missing is not None:
        print(f"stable-explore {args.command}: {missing}", file=sys.stderr)
        return EXIT_PROBLEM
    try:
        if args.command == "ls":
            print(api.versions(args.name, home=home) if args.name else api.datasets(home=home))
        elif args.command == "show":
            print(_show(args.ref, home))
        elif args.command == "versions":
            print(api.versions(args.name, home=home))
        elif args.command == "diff":
            diff = api.compare(args.a, args.b, home=home)
            print(diff.to_json() if args.json else diff)
        elif args.command == "verify":
            return _verify(args.refs, home)
        elif args.command == "fsck":
            report = api.fsck(args.name, home=home)
            print(report)
            if not report.ok:
                return 1
        elif args.command == "gc":
            return _gc(args.name, args.keep, home, args.lock_timeout)
        elif args.command == "export":
            print(_export(args.ref, args.to, _export_format(args.to, args.format) or "", home))
        elif args.command == "tag":
            print(f"{args.tag} -> {api.tag(args.ref, args.tag, home=home, lock_timeout=args.lock_timeout)}")
        elif args.command == "build":
            print(_build(args, home))
        elif args.command == "push":
            sent = api.push(args.ref, args.to, home=home, progress=not args.quiet, lock_timeout=args.lock_timeout)
            print(sent)
        elif args.command == "pull":
            ds = api.pull(args.url, home=home, progress=not args.quiet, lock_timeout=args.lock_timeout)
            print(f"pulled {ds!r} (verified)")
    except StableExploreError as exc:
        note = _failure_note(exc)  # what a failed build left (a version in place whose refs did not move, ...)
        print(f"stable-explore {args.command}: {exc}" + (f"; {note}" if note else ""), file=sys.stderr)
        return EXIT_PROBLEM
    except KeyboardInterrupt:
        print(f"stable-explore {args.command}: interrupted; nothing was saved", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if args.command != "build" or not raised_in_user_code(exc):
            raise  # our own failure: the full traceback is what a bug report needs
        _print_user_error(exc)
        return EXIT_PROBLEM
    return 0


def _failure_note(error: BaseException) -> str | None:
    """What a failed build or publish noted on its error (taken off it); an error with no notes has none."""
    if not getattr(error, "__notes__", None):  # ls, show, a bad name: no note, and no catalog build to import
        return None
    from stable_explore.catalog.build import pop_failure_note

    return pop_failure_note(error)


def _print_user_error(error: BaseException) -> None:
    """A generator's (or its module's) error as the magic shows it: what was kept, then the user's frames."""
    note = _failure_note(error)  # said on the first line
    kept = f"; {note}" if note else ""
    print(f"stable-explore build: your code raised {type(error).__name__}{kept}", file=sys.stderr)
    print("\n".join(trimmed_traceback(error)), file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
