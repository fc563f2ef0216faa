"""The ``stable-explore`` command: ls, show, diff, verify, fsck, gc, export, tag.

Examples
--------
::

    stable-explore ls
    stable-explore show pets@clean
    stable-explore diff pets@1a2b pets@latest --json
    stable-explore verify pets
    stable-explore fsck
    stable-explore gc --keep 2
    stable-explore export pets@clean --to pets.parquet
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from stable_explore import api
from stable_explore._units import format_size
from stable_explore.errors import StableExploreError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stable-explore", description="Cached datasets: list, inspect, diff, verify.")
    parser.add_argument("--home", help="the catalog root (default $STABLE_EXPLORE_HOME or ~/.cache/stable-explore)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("ls", help="datasets, or the versions of one").add_argument("name", nargs="?")
    commands.add_parser("show", help="one version: size, schema, label counts, lineage").add_argument("ref")
    diff = commands.add_parser("diff", help="what changed from version A to version B")
    diff.add_argument("a")
    diff.add_argument("b")
    diff.add_argument("--json", action="store_true", help="the machine-readable form")
    verify = commands.add_parser("verify", help="re-hash every shard of versions (exit 1 if any is damaged)")
    verify.add_argument("refs", nargs="+")
    fsck = commands.add_parser("fsck", help="check every version, ref and source record (exit 1 on any problem)")
    fsck.add_argument("name", nargs="?", help="only this dataset")
    gc = commands.add_parser("gc", help="delete untagged versions beyond the newest")
    gc.add_argument("name", nargs="?")
    gc.add_argument("--keep", type=int, default=1, help="newest versions to keep per dataset (default 1)")
    export = commands.add_parser("export", help="write a version to Parquet or CSV")
    export.add_argument("ref")
    export.add_argument("--to", required=True, type=Path, help="output file (.parquet or .csv)")
    tag = commands.add_parser("tag", help="point a tag at a version")
    tag.add_argument("ref")
    tag.add_argument("tag")
    return parser


def _show(ref: str, home: str | None) -> str:
    ds = api.load(ref, home=home)
    lines = [repr(ds)]
    meta = ds.metadata
    for label, key in (("description", "description"), ("license", "license"), ("created", "created_at")):
        if meta.get(key):
            lines.append(f"{label}: {meta[key]}")
    if meta.get("parent"):
        lines.append(f"parent: {meta['parent']}  ({meta.get('message') or 'no message'})")
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    home = args.home
    try:
        if args.command == "ls":
            print(api.versions(args.name, home=home) if args.name else api.datasets(home=home))
        elif args.command == "show":
            print(_show(args.ref, home))
        elif args.command == "diff":
            diff = api.compare(args.a, args.b, home=home)
            print(diff.to_json() if args.json else diff)
        elif args.command == "verify":
            for ref in args.refs:
                print(f"{ref}: {api.verify(ref, home=home)}")
        elif args.command == "fsck":
            report = api.fsck(args.name, home=home)
            print(report)
            if not report.ok:
                return 1
        elif args.command == "gc":
            print(f"freed {format_size(api.gc(args.name, keep=args.keep, home=home))}")
        elif args.command == "export":
            ds = api.load(args.ref, home=home)
            if args.to.suffix == ".csv":
                ds.to_pandas(images="drop").to_csv(args.to)
            else:
                ds.to_parquet(args.to)
            print(f"wrote {len(ds):,} rows to {args.to}")
        elif args.command == "tag":
            print(f"{args.tag} -> {api.tag(args.ref, args.tag, home=home)}")
    except (StableExploreError, ValueError, KeyError) as exc:
        print(f"stable-explore {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
