"""What is part of a source's fingerprint, and what is not: values, arguments, globals, closures, helper classes,
files and folders it names.

The first tests tokenize values directly; the later ones build through ``se.build`` and check the reason a
build gives. Values with no faithful hash, files named by arguments and code in the user's modules are covered
by tests/test_cache_decisions.py (they build, with a warning, instead of being refused).
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from json import dumps
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest

import stable_explore as se
from stable_explore import Features, Value
from stable_explore.catalog.fingerprints.fingerprint import Tokenizer, fingerprint_parts
from tests.sources import NUM_FEATURES, numbers

NUM = Features(x=Value("int64"))


SPEED = 3


class Unfingerprintable(Exception):
    """What the tokenizer records as unstable, raised so a test can match its wording."""


def token(value: object, name: str) -> object:
    """The content token of one value (a value with no faithful hash raises, so a test can see it)."""
    tokenizer = Tokenizer()
    result = tokenizer.value(value, name)
    if tokenizer.unstable:
        raise Unfingerprintable("; ".join(f"cannot fingerprint {k} ({v})" for k, v in tokenizer.unstable.items()))
    return result


def function_token(function: object) -> dict[str, object]:
    """A function's code digest and the globals it reads, as the cache decision sees them."""
    tokenizer = Tokenizer()
    return {"source": tokenizer.source(function), "globals": tokenizer.globals}  # type: ignore[arg-type]


def same(a: object, b: object) -> bool:
    return fingerprint_parts({"v": token(a, "a")}) == fingerprint_parts({"v": token(b, "b")})


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([1, "a", None], [1, "a", None]),
        ({"b": 1, "a": [2.5]}, {"a": [2.5], "b": 1}),  # insertion order does not matter
        ({3, 1, 2}, {2, 3, 1}),
        (float("nan"), float("nan")),  # NaN != NaN, but it is the same input
        (np.arange(6, dtype=np.int32)[::2], np.array([0, 2, 4], dtype=np.int32)),  # a view and its copy
        (b"abc", bytes([97, 98, 99])),
        (np.float32(0.5), np.float32(0.5)),
        (Features(x=Value("int64")), Features(x=Value("int64"))),
        # values a notebook holds that once had no token (the build ran every time, with a warning)
        (ZoneInfo("Europe/Paris"), ZoneInfo("Europe/Paris")),
        (slice(10, 50), slice(10, 50)),
        (..., ...),
        (deque([1, 2], maxlen=5), deque([1, 2], maxlen=5)),
        (pd.NA, pd.NA),
        (pd.NaT, pd.NaT),
        (pd.Period("2024-01", "M"), pd.Period("2024-01", "M")),
        (pd.Interval(0, 1.5), pd.Interval(0, 1.5)),
        (pd.Categorical(["a", "b", "a"]), pd.Categorical(["a", "b", "a"])),
    ],
)
def test_equal_inputs_have_equal_tokens(a: object, b: object) -> None:
    assert same(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (1, True),
        (1, 1.0),
        (0.0, -0.0),
        ([1, 2], (1, 2)),
        ([1, 2], [2, 1]),
        ({1, 2}, frozenset({1, 2})),
        ("1", 1),
        (b"ab", "ab"),
        (np.arange(6), np.arange(6).reshape(2, 3)),  # same bytes, another shape
        (np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int64)),
        (np.float32(0.5), np.float64(0.5)),
        ({"a": 1}, {"a": 2}),
        (Features(x=Value("int64")), Features(x=Value("int32"))),
        (ZoneInfo("Europe/Paris"), ZoneInfo("Europe/Berlin")),
        (slice(10, 50), slice(10, 51)),
        (slice(1, 2), range(1, 2)),
        (deque([1, 2]), [1, 2]),
        (deque([1, 2], maxlen=5), deque([1, 2])),
        (pd.NA, None),
        (pd.NA, pd.NaT),
        (pd.Period("2024-01", "M"), pd.Period("2024-01-01", "D")),
        (pd.Interval(0, 1), pd.Interval(0, 1, closed="left")),
        (pd.Categorical(["a", "b"]), pd.Categorical(["b", "a"])),
        (pd.Categorical(["a"], categories=["a", "b"]), pd.Categorical(["a"])),
    ],
)
def test_different_inputs_have_different_tokens(a: object, b: object) -> None:
    assert not same(a, b)


def test_an_argparse_namespace_is_hashed_by_its_fields() -> None:
    """A script's parsed arguments passed to a generator: their values are the token (argparse is imported lazily)."""
    import argparse
    from types import SimpleNamespace

    assert same(argparse.Namespace(root="data", n=2), argparse.Namespace(n=2, root="data"))
    assert not same(argparse.Namespace(root="data", n=2), argparse.Namespace(root="data", n=3))
    assert not same(argparse.Namespace(n=2), SimpleNamespace(n=2))  # the type is part of the token


def test_a_pandas_index_a_generator_reads_is_hashed_by_content(tmp_path: Path) -> None:
    """``COLUMNS = df.columns`` read by a generator crashed the build (AttributeError: 'Index' has no 'index')."""
    import pandas as pd

    assert same(pd.Index(["a", "b"], name="col"), pd.Index(["a", "b"], name="col"))
    assert not same(pd.Index(["a", "b"]), pd.Index(["b", "a"]))
    assert not same(pd.Index(["a", "b"], name="col"), pd.Index(["a", "b"], name="other"))
    frame = pd.DataFrame({"x": [1, 2]})
    columns = frame.columns

    def rows() -> object:
        for i in range(len(frame)):
            yield {c: int(frame[c][i]) for c in columns}

    first = se.build(rows, NUM, home=tmp_path, progress=False)
    assert se.build(rows, NUM, home=tmp_path, progress=False).build_info.startswith("reused")
    assert len(first) == 2


def test_a_nested_bad_value_is_named_by_its_position() -> None:
    with pytest.raises(Unfingerprintable, match=r"argument 'opts'\['model'\]\[1\]"):
        token({"model": [1, object()]}, "argument 'opts'")


def test_objects_may_give_their_own_token() -> None:
    class Versioned:
        def __init__(self, version: str) -> None:
            self.version = version

        def __stable_token__(self) -> str:
            return self.version

    assert same(Versioned("1"), Versioned("1"))
    assert not same(Versioned("1"), Versioned("2"))


def _reads_speed(n):
    for i in range(n):
        yield {"x": i * SPEED}


def _calls_a_helper(n):
    yield from _reads_speed(n)


def _recursive_a(n):
    return _recursive_b(n - 1) if n else 0


def _recursive_b(n):
    return _recursive_a(n - 1) if n else 0


def test_modules_classes_and_library_functions_count_as_code_not_values() -> None:
    def uses_libraries(n):
        yield {"x": int(np.sqrt(n)), "s": dumps(os.sep), "p": Path().name}

    assert function_token(uses_libraries)["globals"] == {}


def test_unfilled_closure_cells_are_skipped() -> None:
    def outer():
        def inner(n):
            yield {"x": later + n}

        token_now = function_token(inner)
        later = 1
        return token_now, function_token(inner)

    before, after = outer()
    assert before["globals"] == {}
    assert after["globals"] == {"later": 1}


def test_unhashable_argument_builds_and_is_named_with_advice(home: Path) -> None:
    import threading

    class Opaque:
        def __init__(self) -> None:
            self.lock = threading.Lock()  # no content hash: the build runs every time, and says why

        def __radd__(self, other: int) -> int:
            return other

    with pytest.warns(se.UnfingerprintableWarning, match=r"argument 'offset'.*key=.*ignore=\['offset'\]"):
        ds = se.build(numbers, NUM_FEATURES, args=(3,), kwargs={"offset": Opaque()}, home=home, progress=False)
    assert len(ds) == 3
    ds = se.build(numbers, NUM_FEATURES, args=(3,), kwargs={"offset": 0}, key="manual", home=home, progress=False)
    assert len(ds) == 3


def test_numpy_arguments_are_hashed_by_content(home: Path) -> None:
    def from_array(values):
        for v in values:
            yield {"x": int(v), "s": "a"}

    a = np.arange(5)
    se.build(from_array, NUM_FEATURES, args=(a,), home=home, progress=False)
    assert se.build(from_array, NUM_FEATURES, args=(a.copy(),), home=home, progress=False).build_info.startswith(
        "reused"
    )
    b = a.copy()
    b[0] = 99
    assert (
        "argument 'values' changed"
        in se.build(from_array, NUM_FEATURES, args=(b,), home=home, progress=False).build_info
    )


def test_library_functions_a_generator_calls_count_as_code(home: Path) -> None:
    # json.dumps reads module globals (an encoder object) that have no faithful token;
    # a user's generator that calls it must still fingerprint.
    def encoded(n):
        for i in range(n):
            yield {"x": len(dumps([i])), "s": dumps({"i": i})}

    se.build(encoded, NUM_FEATURES, args=(3,), home=home, progress=False)
    assert se.build(encoded, NUM_FEATURES, args=(3,), home=home, progress=False).build_info.startswith("reused")


def test_closure_variables_are_part_of_the_fingerprint(home: Path) -> None:
    def make(prefix):
        def tagged(n):
            for i in range(n):
                yield {"x": i, "s": f"{prefix}{i}"}

        return tagged

    se.build(make("a"), NUM_FEATURES, name="closure", args=(2,), home=home, progress=False)
    assert se.build(
        make("a"), NUM_FEATURES, name="closure", args=(2,), home=home, progress=False
    ).build_info.startswith("reused")
    changed = se.build(make("b"), NUM_FEATURES, name="closure", args=(2,), home=home, progress=False)
    assert changed.build_info == "rebuilt: variable 'prefix' changed"
    assert changed[1]["s"] == "b1"


def test_a_default_argument_read_from_a_variable_is_part_of_the_fingerprint(tmp_path: Path) -> None:
    namespace: dict = {"ROOT": "v1"}
    exec("def gen(root=ROOT):\n    yield {'x': len(root)}\n", namespace)
    se.build(namespace["gen"], NUM, name="d", home=tmp_path, progress=False)
    namespace["ROOT"] = "v222"
    exec("def gen(root=ROOT):\n    yield {'x': len(root)}\n", namespace)
    again = se.build(namespace["gen"], NUM, name="d", home=tmp_path, progress=False)
    assert again.build_info == "rebuilt: argument 'root' changed"
    assert again[0]["x"] == 4


def test_a_helper_class_beside_the_generator_is_part_of_the_fingerprint(tmp_path: Path) -> None:
    import importlib.util

    source = (
        "class Scale:\n    def apply(self, value):\n        return value * {factor}\n\n"
        "def scaled(n):\n    for i in range(n):\n        yield {{'x': Scale().apply(i)}}\n"
    )
    module_path = tmp_path / "helper_module_for_test.py"

    def load(factor: int):
        module_path.write_text(source.format(factor=factor))
        spec = importlib.util.spec_from_file_location("helper_module_for_test", module_path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["helper_module_for_test"] = module
        spec.loader.exec_module(module)
        return module

    try:
        first = load(2)
        se.build(first.scaled, NUM, args=(3,), home=tmp_path / "home", progress=False)
        hit = se.build(first.scaled, NUM, args=(3,), home=tmp_path / "home", progress=False)
        assert hit.build_info.startswith("reused")
        edited = load(5)  # the helper class changed; the generator's own text did not
        again = se.build(edited.scaled, NUM, args=(3,), home=tmp_path / "home", progress=False)
        assert again.build_info == "rebuilt: variable 'Scale' changed"
        assert again[2]["x"] == 10
    finally:
        sys.modules.pop("helper_module_for_test", None)


def test_a_folder_argument_rebuilds_when_files_are_added(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    an_hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(folder, ns=(an_hour_ago, an_hour_ago))  # adding a file below moves the folder's time to now

    def files(root):
        for path in sorted(Path(root).glob("*.txt")):
            yield {"x": len(path.read_text())}

    first = se.build(files, NUM, args=(str(folder),), home=tmp_path / "home", progress=False)
    assert len(first) == 1
    (folder / "b.txt").write_text("bb")
    again = se.build(files, NUM, args=(str(folder),), home=tmp_path / "home", progress=False)
    assert again.build_info == f"rebuilt: files changed under argument 'root' ({folder}): 1 added (b.txt)"
    assert len(again) == 2


def test_every_token_is_json_that_reads_back_as_itself() -> None:
    import dataclasses
    import functools
    import json
    import random

    @dataclasses.dataclass
    class Crop:
        size: int
        box: tuple[float, float]

    values: list[object] = [
        [1, "a", None, True],
        2.5,
        float("inf"),
        b"bytes",
        Path("data/pets"),
        {3, 1, 2},
        deque([1, 2], maxlen=4),
        {"b": [1, 2.0], 3: (4, 5)},
        np.float32(0.5),
        np.int64(7),
        np.arange(6).reshape(2, 3),
        np.array(["a", None], dtype=object),
        np.random.default_rng(0),
        random.Random(1),
        pd.Series([1.5, 2.5], name="s"),
        pd.DataFrame({"path": ["a.jpg"], "n": [1]}),
        pd.Categorical(["a", "b"]),
        functools.partial(max, 1),
        slice(1, None, 2),
        range(3),
        Crop(3, (0.5, 1.5)),
        Features(x=Value("int64")),
        ZoneInfo("Europe/Paris"),
    ]
    for value in values:
        tokenizer = Tokenizer()
        result = tokenizer.value(value, "value")
        assert not tokenizer.unstable, value
        assert json.loads(json.dumps(result, allow_nan=False)) == result, value
