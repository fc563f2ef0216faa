"""Every error stable-explore raises on purpose is in its hierarchy, and still the builtin users catch."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import stable_explore as se
from stable_explore import errors

PACKAGE = Path(__file__).resolve().parents[1] / "stable_explore"
BUILTINS = {"ValueError", "KeyError", "TypeError", "IndexError", "RuntimeError", "FileNotFoundError", "ImportError"}
# raises that are protocol or control flow, not errors shown to users
ALLOWED = {
    ("storage/write/writer.py", "KeyError"),  # caught two lines below: "not one of the features' fields"
}


def test_no_bare_builtin_errors_are_raised() -> None:
    bare = []
    for module in sorted(PACKAGE.rglob("*.py")):
        where = str(module.relative_to(PACKAGE))
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = ast.unparse(raised)
            if name in BUILTINS and (where, name) not in ALLOWED:
                bare.append(f"{where}:{node.lineno} raise {name}")
    assert not bare, "\n".join(bare)


def test_every_error_class_is_a_stable_explore_error_and_exported() -> None:
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, (se.StableExploreError, se.StableExploreWarning)), name
        assert getattr(se, name) is cls, f"se.{name} is not exported"


def test_errors_all_lists_every_class_it_defines() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == errors.__name__
    }
    assert defined == set(errors.__all__)
    assert {"ParallelBuildError", "StableExploreWarning", "LockWaitWarning"} <= defined


def test_every_warning_of_ours_has_one_base_and_keeps_its_builtin() -> None:
    warnings_of_ours = [getattr(errors, n) for n in errors.__all__ if issubclass(getattr(errors, n), Warning)]
    assert {w.__name__ for w in warnings_of_ours} == {
        "StableExploreWarning",
        "UnfingerprintableWarning",
        "LockWaitWarning",
        "GcProblemWarning",
        "EmptyBuildWarning",
    }
    for warning in warnings_of_ours:
        assert issubclass(warning, se.StableExploreWarning), warning.__name__
        if warning is not se.StableExploreWarning:  # each keeps the builtin category filters already name
            assert issubclass(warning, UserWarning), f"{warning.__name__} stays a UserWarning"
    assert not issubclass(se.StableExploreWarning, se.StableExploreError)
    assert se.errors.StableExploreWarning is se.StableExploreWarning


def test_one_filter_silences_every_warning_of_ours(tmp_path: Path) -> None:
    import threading
    import warnings

    def numbers(lock: object) -> Iterator[dict[str, int]]:
        yield from ({"x": i} for i in range(3))

    features = se.Features(x=se.Value("int64"))
    with pytest.warns(se.UnfingerprintableWarning) as caught:
        se.build(numbers, features, name="n", args=(threading.Lock(),), home=tmp_path, progress=False)
    assert all(isinstance(w.message, se.StableExploreWarning) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", se.StableExploreWarning)
        ds = se.build(numbers, features, name="n", args=(threading.Lock(),), home=tmp_path, progress=False)
    assert len(ds) == 3


def test_an_invalid_name_is_caught_as_ours_and_as_value_error(tmp_path: Path) -> None:
    features = se.Features(x=se.Value("int64"))
    with pytest.raises(se.InvalidNameError, match="dataset name must start with a letter or digit") as caught:
        se.build([{"x": 1}], features, name="../escape", home=tmp_path, progress=False)
    assert isinstance(caught.value, ValueError)
    assert not any(tmp_path.iterdir()), "nothing is written for a refused name"


def test_a_missing_column_reads_without_extra_quotes(tmp_path: Path) -> None:
    ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="one", home=tmp_path, progress=False)
    with pytest.raises(se.ColumnNotFoundError) as caught:
        ds.filter(y=1)
    assert isinstance(caught.value, KeyError)
    assert str(caught.value) == "no column 'y'; columns are ['x']"


def test_rows_out_of_range_and_bad_options_name_what_is_valid(tmp_path: Path) -> None:
    ds = se.build(
        [{"x": i} for i in range(3)], se.Features(x=se.Value("int64")), name="n", home=tmp_path, progress=False
    )
    with pytest.raises(se.RowIndexError, match="row 5 is out of range for a dataset of 3 rows"):
        ds[5]
    with pytest.raises(se.InvalidOptionError, match="images must be one of"):
        ds.to_pandas(images="gif")
    with pytest.raises(se.InvalidOptionError, match="keep must be >= 0"):
        se.gc("n", keep=-1, home=tmp_path)
    with pytest.raises(se.InvalidArgumentTypeError, match="metadata must be JSON-serialisable"):
        se.build([{"x": 1}], ds.features, name="n", metadata={"when": object()}, home=tmp_path, progress=False)


def test_tagging_a_cache_outside_the_catalog_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STABLE_EXPLORE_HOME", str(tmp_path / "default-home"))
    ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="one", home=tmp_path, progress=False)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    shutil.copytree(ds.cache_dir, outside)
    copy = se.load(outside)
    assert copy.name == "one"
    assert copy.home is None
    with pytest.raises(se.NotInCatalogError, match="opened by path outside one"):
        se.tag(copy, "x")
    assert not (tmp_path / "one" / "refs" / "x").exists()
    assert not (tmp_path / "default-home").exists(), "a refused tag wrote into the default home"
