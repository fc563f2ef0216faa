"""The state machine of tests/model/machine.py, on a local home and on a bucket (SeaweedFS), with a fixed seed.

``benchmarks/soak.py --minutes N`` runs the same machines long, with random seeds.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.model.machine import STEPS, BucketMachine, HomeMachine

if TYPE_CHECKING:
    import pytest

    from tests.s3server import S3Server


def ci_settings(examples: int, steps: int) -> settings:
    """A fixed seed and a bounded budget (``SE_MODEL_EXAMPLES`` / ``SE_MODEL_STEPS`` override it)."""
    return settings(
        derandomize=True,  # the same steps on every run: CI reproduces what it found
        database=None,
        deadline=None,
        max_examples=int(os.environ.get("SE_MODEL_EXAMPLES", examples)),
        stateful_step_count=int(os.environ.get("SE_MODEL_STEPS", steps)),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


def _run(machine: type[HomeMachine], examples: int, steps: int) -> None:
    before = STEPS["steps"]
    started = time.monotonic()
    run_state_machine_as_test(machine, settings=ci_settings(examples, steps))
    assert STEPS["steps"] > before, "the machine ran no step"
    print(f"{machine.__name__}: {STEPS['steps'] - before} steps in {time.monotonic() - started:.1f} s; {dict(STEPS)}")


def test_the_model_holds_on_a_local_home() -> None:
    _run(HomeMachine, examples=5, steps=16)


def test_the_model_holds_on_a_bucket(s3_env: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BucketMachine, "bucket", f"s3://team/model-{os.getpid()}")
    _run(BucketMachine, examples=3, steps=14)
