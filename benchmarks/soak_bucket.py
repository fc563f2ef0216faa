"""The chaos soak of a workgroup's bucket (issue 22), run long: ``python benchmarks/soak_bucket.py --minutes 10``.

Starts a SeaweedFS on loopback (the tests' server), then runs :func:`tests.reliability.bucket_soak.soak`:
a saver, a builder, a collector and a reader, each a process with its own local cache, on one bucket,
while participants are SIGKILLed and the server is stopped (SIGSTOP) for ``--stop`` seconds at random.
Prints the report as JSON: operations, faults, expected errors by kind, and lost versions, dangling
refs, wrong reads, raw exceptions and hangs (all of which must be zero). Exits 1 if any is not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests/s3server.py and tests/reliability: the server and the soak the tests use

from tests.reliability.bucket_soak import soak  # noqa: E402
from tests.s3server import seaweedfs  # noqa: E402


def main() -> int:
    """Run the soak and print its report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0, help="how long the participants run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--stop",
        type=float,
        nargs=2,
        default=(10.0, 60.0),
        metavar=("MIN", "MAX"),
        help="seconds the server is stopped per fault (default 10 60)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with seaweedfs(root / "seaweedfs", volumes=8) as server:
            server.create_bucket("soak")
            os.environ.update(server.env)
            os.environ["STABLE_EXPLORE_CACHE"] = str(root / "checker")
            report = soak(
                "s3://soak/home",
                server.pid,
                root,
                seconds=args.minutes * 60,
                seed=args.seed,
                stop_server=tuple(args.stop),  # type: ignore[arg-type]
                hang_after=max(120.0, args.stop[1] + 60),
            )
    print(json.dumps(report.to_json(), indent=2))
    bad = report.lost or report.dangling or report.wrong or report.raw or report.hangs
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
