"""The command-line options of a build, as argparse takes them: the CLI's ``build`` and ``%stable_cache`` share them.

Names, defaults and help texts only, so that ``stable-explore --help`` and ``%load_ext stable_explore`` build
their parsers without importing the catalog, pyarrow or numpy; :func:`stable_explore.catalog.options_from_args`
turns the parsed values into checked :class:`~stable_explore.catalog.BuildOptions` when a build runs.

Examples
--------
>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> for flags, keywords in BUILD_ARGUMENTS:
...     _ = parser.add_argument(*flags, **keywords)
>>> args = parser.parse_args(["--shard-size", "64MB", "--ignore", "logger", "db"])
>>> args.shard_size, args.ignore, args.batch_size
('64MB', ['logger', 'db'], 1000)
"""

from __future__ import annotations

from typing import Any

__all__ = ["BUILD_ARGUMENTS"]

# The command-line options the CLI's ``build`` and ``%stable_cache`` share, written once: (flags, argparse keywords).
BUILD_ARGUMENTS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("--description",), {"help": "stored as ds.DESCR; part of the version id"}),
    (("--license",), {"help": "stored as ds.LICENSE; part of the version id"}),
    (("--tag",), {"help": "also point this tag at the version"}),
    (("--force",), {"action": "store_true", "help": "build even if this source was built before"}),
    (("--key",), {"help": "an explicit cache key, for sources that cannot be fingerprinted"}),
    (("--shard-size",), {"default": "256MB", "help": "target shard size, e.g. 256MB (default; MB read as MiB)"}),
    (("--batch-size",), {"type": int, "default": 1000, "help": "rows per record batch (default 1000)"}),
    (("--compression",), {"choices": ["lz4", "zstd"], "default": None, "help": "Arrow IPC buffer compression"}),
    (
        ("--ignore",),
        {
            "nargs": "+",
            "action": "extend",
            "default": [],
            "metavar": "NAME",
            "help": "arguments or variables left out of the fingerprint (they do not change the data)",
        },
    ),
    (
        ("--watch",),
        {
            "nargs": "+",
            "action": "extend",
            "default": [],
            "metavar": "PATH",
            "help": "more files or folders whose state is part of the fingerprint (paths the code opens)",
        },
    ),
    (("--check-content",), {"action": "store_true", "help": "hash file contents, not only sizes and times"}),
    (("--batched",), {"action": "store_true", "help": "the source yields batches of columns, not rows"}),
    (
        ("--lock-timeout",),
        {
            "type": float,
            "metavar": "SECONDS",
            "help": "give up after waiting this long for any lock the build takes (default: wait for another build "
            "of the same source; $STABLE_EXPLORE_LOCK_TIMEOUT or 300 s for the refs lock)",
        },
    ),
)
