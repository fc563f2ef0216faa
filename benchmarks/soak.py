"""Run the model-checked state machine of tests/model/ long, with random seeds, on a local home and on a bucket.

Each round runs a batch of examples of one machine (the homes alternate); a failure is shrunk by
hypothesis, reported with its reproduction (the steps, as Python) and the soak goes on. At the end
(or on Ctrl-C) it prints the steps run per rule, the examples, the corruptions injected and every
distinct failure. The bucket is a SeaweedFS server on loopback (tests/s3server.py), stopped at the end.

Usage::

    python benchmarks/soak.py --minutes 30                  # both homes
    python benchmarks/soak.py --minutes 5 --homes local --json soak.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, settings  # noqa: E402 - after the checkout is on the path
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

from tests.model.machine import STEPS, BucketMachine, HomeMachine  # noqa: E402


@contextlib.contextmanager
def bucket_home(root: Path) -> Iterator[str]:
    """A SeaweedFS bucket on loopback, its credentials in this process's environment."""
    from tests.s3server import seaweedfs

    # the weed binary comes with the test extra, beside this interpreter (a venv not activated is not on PATH)
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    with seaweedfs(root) as server:
        server.create_bucket("soak")
        os.environ.update(server.env)
        yield "s3://soak/model"


def _round(machine: type[HomeMachine], examples: int, steps: int) -> dict[str, Any] | None:
    """Run one batch of random examples; the failure (shrunk), or None."""
    chosen = settings(
        derandomize=False,
        database=None,
        deadline=None,
        max_examples=examples,
        stateful_step_count=steps,
        suppress_health_check=list(HealthCheck),
    )
    try:
        run_state_machine_as_test(machine, settings=chosen)
    except Exception as exc:  # every failure is reported, and the soak goes on
        # a flaky failure (a step that failed once and passed on replay) groups what it saw
        inner = [exc, *getattr(exc, "exceptions", ())]
        return {
            "machine": machine.__name__,
            "error": " / ".join(f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}" for e in inner),
            "reproduction": "\n".join(note for e in inner for note in getattr(e, "__notes__", [])),
            "traceback": "\n".join("".join(traceback.format_exception(e)[-8:]) for e in inner),
        }
    return None


def soak(minutes: float, homes: list[str], examples: int, steps: int) -> dict[str, Any]:
    """Alternate the homes' machines until ``minutes`` have passed; the figures and the failures."""
    failures: list[dict[str, Any]] = []
    rounds = 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="se-soak-") as scratch, contextlib.ExitStack() as stack:
        machines: list[type[HomeMachine]] = []
        if "local" in homes:
            machines.append(HomeMachine)
        if "bucket" in homes:
            BucketMachine.bucket = stack.enter_context(bucket_home(Path(scratch) / "seaweedfs"))
            machines.append(BucketMachine)
        try:
            while time.monotonic() - started < minutes * 60:
                machine = machines[rounds % len(machines)]
                rounds += 1
                failure = _round(machine, examples, steps)
                if failure is not None:
                    failures.append(failure)
                    print(f"FAILURE in round {rounds} ({machine.__name__}): {failure['error']}", flush=True)
                    print(failure["reproduction"], flush=True)
                elapsed = (time.monotonic() - started) / 60
                print(f"{elapsed:6.1f} min: round {rounds}, {STEPS['steps']} steps, {STEPS['examples']} examples, "
                      f"{len(failures)} failure(s)", flush=True)  # fmt: skip
        except KeyboardInterrupt:
            print("interrupted: reporting what ran", flush=True)
    distinct = {f["error"]: f for f in failures}
    return {
        "minutes": round((time.monotonic() - started) / 60, 2),
        "homes": homes,
        "rounds": rounds,
        "steps": STEPS["steps"],
        "examples": STEPS["examples"],
        "corruptions_injected": STEPS["corruptions"],
        "reads_refused_under_damage": STEPS["paths_refused"] + STEPS["refused_on_open"],
        "rules": {k: v for k, v in sorted(STEPS.items()) if k not in ("steps", "examples")},
        "failures": len(failures),
        "distinct_failures": list(distinct.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--homes", default="local,bucket", help="comma-separated: local, bucket")
    parser.add_argument("--examples", type=int, default=10, help="examples per round")
    parser.add_argument("--steps", type=int, default=40, help="steps per example (at most)")
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args()
    warnings.filterwarnings("error", module="stable_explore")  # as in the tests: our own warnings are errors
    report = soak(args.minutes, args.homes.split(","), args.examples, args.steps)
    summary = {k: v for k, v in report.items() if k != "distinct_failures"}
    print(json.dumps(summary, indent=2))
    for failure in report["distinct_failures"]:
        print(f"\n== {failure['machine']}: {failure['error']}\n{failure['reproduction']}\n{failure['traceback']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
