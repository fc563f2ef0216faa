"""Build sources the catalog tests share.

A generator's code and the globals it reads are part of its fingerprint, so
the generator and the global it reads (``ROOT``) live here, in one module:
a test changes ``sources.ROOT`` to see a build notice the change.
"""

from __future__ import annotations

from stable_explore import Features, Value

ROOT = "data/v1"


def numbers(n, offset=0):
    # a function attribute, not a global value: globals a generator reads are part of its fingerprint
    numbers.calls += 1
    for i in range(n):
        yield f"k{i}", {"x": i + offset, "s": f"{ROOT}/{i}"}


numbers.calls = 0
NUM_FEATURES = Features(x=Value("int64"), s=Value("string"))
