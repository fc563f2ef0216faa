"""What is part of a source's fingerprint: arguments, globals, closures, helper classes, folders it reads."""

from __future__ import annotations

import os
import sys
import time
from json import dumps
from pathlib import Path

import numpy as np
import pytest

import stable_explore as se
from stable_explore import Features, FingerprintError, Value
from tests.sources import NUM_FEATURES, numbers

NUM = Features(x=Value("int64"))


def test_unhashable_argument_is_named_with_advice(home: Path) -> None:
    class Opaque:
        pass

    with pytest.raises(FingerprintError, match=r"argument 'offset'.*key="):
        se.build(numbers, NUM_FEATURES, args=(3,), kwargs={"offset": Opaque()}, home=home, progress=False)
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
    assert again.build_info == "rebuilt: argument 'root' changed"
    assert len(again) == 2
