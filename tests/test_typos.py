"""A typo on a dataset is an error at once, and a type error before the code runs (mypy)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import stable_explore as se

ROOT = Path(__file__).resolve().parents[1]


def test_a_misspelt_attribute_is_an_attribute_error(tmp_path: Path) -> None:
    ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="t", home=tmp_path, progress=False)
    with pytest.raises(AttributeError, match="num_row"):
        _ = ds.num_row  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="NOT_THERE"):
        _ = ds.NOT_THERE  # type: ignore[attr-defined]


def test_mypy_reports_a_misspelt_attribute_and_method(tmp_path: Path) -> None:
    from mypy import api

    snippet = tmp_path / "user_code.py"
    snippet.write_text(
        textwrap.dedent(
            """
            import stable_explore as se

            ds = se.load("pets")
            rows: int = ds.num_rows
            description: str | None = ds.DESCR
            ds.num_row
            ds.to_pandsa()
            se.lod("pets")  # the package imports its names when first used: a misspelt one is still an error
            """
        )
    )
    # the project's own cache (CI's mypy step fills it) keeps this to seconds
    out, _err, status = api.run([str(snippet), "--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary"])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1
    assert len(errors) == 3, out
    assert '"CachedDataset" has no attribute "num_row"' in errors[0]
    assert '"CachedDataset" has no attribute "to_pandsa"' in errors[1]
    assert 'Module has no attribute "lod"' in errors[2]


def test_a_misspelt_map_option_is_refused_naming_it(tmp_path: Path) -> None:
    ds = se.build([{"x": 1}], se.Features(x=se.Value("int64")), name="t", home=tmp_path, progress=False)
    with pytest.raises(se.InvalidArgumentTypeError, match=r"'batchsize'.*batch_size") as caught:
        ds.map(lambda row: {"y": row["x"]}, batchsize=10, progress=False)  # type: ignore[call-arg]
    assert isinstance(caught.value, TypeError)  # what a misspelt keyword raised before
    assert ds.map(lambda row: {"y": row["x"] + 1}, progress=False)["y"] == [2]


def test_mypy_reports_a_misspelt_or_mistyped_option_of_map_and_from_parquet(tmp_path: Path) -> None:
    from mypy import api

    snippet = tmp_path / "user_code.py"
    snippet.write_text(
        textwrap.dedent(
            """
            import stable_explore as se

            ds = se.load("pets")
            ds.map(lambda row: row, batched=True, batch_size=8, progress=False)
            se.from_parquet("rows.parquet", tag="v1", progress=False)
            ds.map(lambda row: row, batchsize=8)
            ds.map(lambda row: row, batch_size="8")
            se.from_parquet("rows.parquet", shard_size=1.5)
            """
        )
    )
    out, _err, status = api.run([str(snippet), "--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary"])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1
    assert [line.split(":")[1] for line in errors] == ["7", "8", "9"], out
    assert '"batchsize"' in errors[0]
