"""The reprs, finished: the diff's thumbnail galleries (paged) and shard counts that agree with the save
report, cards that follow JupyterLab's theme, DataFrames shown with their images, tab completion, and
progress bars with real counts that close with the failure."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import stable_explore as se
from stable_explore import CachedDataset, Features
from tests.conftest import NAMES, pet_rows


@pytest.fixture
def pets(tmp_path: Path, pet_features: Features, jpegs: list[bytes]) -> CachedDataset:
    return se.build(
        pet_rows(300, jpegs), pet_features, name="pets", home=tmp_path, progress=False, batch_size=50, shard_size=1
    )


# -- 3. the diff's HTML --------------------------------------------------------------------------


def test_diff_html_shows_removed_and_added_rows_as_thumbnail_galleries(tmp_path: Path, jpegs: list[bytes]) -> None:
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=NAMES))
    old = se.build(
        [(f"k{i}", {"image": jpegs[i], "label": i % 3}) for i in range(20)],
        features,
        name="g",
        home=tmp_path,
        progress=False,
    )
    new = se.build(
        [(f"k{i}", {"image": jpegs[i], "label": i % 3}) for i in range(3, 22)],
        features,
        name="g",
        home=tmp_path,
        progress=False,
    )
    diff = se.compare(old, new)
    html = diff._repr_html_()
    assert diff.summary().startswith("+2 -3")
    assert html.count("data-testid='se-diff-removed'") == 3
    assert html.count("data-testid='se-diff-added'") == 2
    for key in ("k0", "k1", "k2", "k20", "k21"):
        assert f"<b>{key}</b>" in html
    assert html.count("<img ") == 5
    assert "removed rows: 3" in html
    assert "added rows: 2" in html


def test_large_diffs_are_paged(tmp_path: Path) -> None:
    features = se.Features(x=se.Value("int64"))
    old = se.build([{"x": i} for i in range(100)], features, name="p", home=tmp_path, progress=False)
    new = old.drop(list(range(60))).save("drop 60")
    diff = se.compare(old, new)
    html = diff._repr_html_()
    assert html.count("data-testid='se-diff-removed'") == 24
    assert "page 1 of 3" in html
    assert "diff.gallery(&#x27;removed&#x27;, page=N)" in html
    last = diff.gallery("removed", page=2)
    assert last.keys == list(range(48, 60))
    assert last._repr_html_().count("data-testid='se-diff-removed'") == 12
    with pytest.raises(se.errors.InvalidOptionError, match="change must be one of"):
        diff.gallery("moved")


def test_shard_counts_in_the_diff_agree_with_the_save_report(tmp_path: Path) -> None:
    features = se.Features(x=se.Value("int64"))
    old = se.build([{"x": i} for i in range(5000)], features, name="s", home=tmp_path, progress=False)
    new = old.drop([4999]).save("drop the last row")
    reused = int(re.search(r"reused (\d+) of the parent's", new.build_info or "").group(1))  # type: ignore[union-attr]
    assert reused == 1
    diff = se.compare(old, new)
    assert len(diff.shards["shared"]) == reused
    assert f"shard files: {reused} shared by both" in str(diff)
    assert f"shard files: {reused} shared by both" in diff._repr_html_()


def test_diff_html_escapes_keys_and_follows_the_theme(tmp_path: Path) -> None:
    features = se.Features(x=se.Value("int64"))
    old = se.build([("<b>a</b>", {"x": 1})], features, name="e", home=tmp_path, progress=False)
    new = se.build([("<i>b</i>", {"x": 1})], features, name="e", home=tmp_path, progress=False)
    html = se.compare(old, new)._repr_html_()
    assert "<b>a</b>" not in html.replace("<b>&lt;b&gt;a&lt;/b&gt;</b>", "")
    assert "&lt;i&gt;b&lt;/i&gt;" in html
    assert "var(--jp-ui-font-color1" in html


# -- 1. the dataset card follows the theme ---------------------------------------------------------


def test_card_colours_come_from_the_theme(tmp_path: Path) -> None:
    ds = se.build(
        [{"x": 1}],
        se.Features(x=se.Value("int64")),
        name="c",
        home=tmp_path,
        progress=False,
        description="grey on black no more",
    )
    html = ds._repr_html_()
    assert "var(--jp-ui-font-color2" in html  # the description
    assert "color:#444" not in html


# -- 8. DataFrames with their images ---------------------------------------------------------------


def test_thumbnail_frames_show_images_inline(pets: CachedDataset) -> None:
    from stable_explore.display import show

    frame = pets[:5].to_pandas(images="thumbnail", thumbnail_size=32)
    html = show(frame)._repr_html_()
    assert html.count("<img ") == 5
    assert "PIL" not in html
    assert "n3" in html
    assert "cat" in html
    assert show(pets[:3].to_pandas())._repr_html_().count("<img ") == 3  # encoded bytes too
    assert "… 295 more rows" in show(pets.to_pandas(images="drop"), max_rows=5)._repr_html_()
    assert 'images="thumbnail"' not in (CachedDataset.to_pandas.__doc__ or "")
    assert "stable_explore.display.show(df)" in (CachedDataset.to_pandas.__doc__ or "")


# -- 9. tab completion -------------------------------------------------------------------------------


def test_completion_offers_columns_and_metadata_attributes(tmp_path: Path) -> None:
    ds = se.build(
        [{"x": 1, "name": "a"}],
        se.Features(x=se.Value("int64"), name=se.Value("string")),
        name="t",
        home=tmp_path,
        progress=False,
        metadata={"source": "lab", "Mixed": 1},
    )
    assert ds._ipython_key_completions_() == ["x", "name"]
    assert {"DESCR", "LICENSE", "HASHES", "to_pandas", "browse"} <= set(dir(ds))
    names = dir(ds.metadata)  # the user's own keys: ds.metadata.SOURCE
    assert {"DESCR", "LICENSE", "HASHES", "SOURCE"} <= set(names)
    assert "MIXED" not in names  # ds.metadata.MIXED would not resolve
    assert ds.metadata.SOURCE == "lab"


# -- 10. progress bars ----------------------------------------------------------------------------------


def test_bars_show_real_counts_and_the_bytes_a_save_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    features = se.Features(x=se.Value("int64"))
    ds = se.build([{"x": i} for i in range(1797)], features, name="b", home=tmp_path, progress=True)
    err = capsys.readouterr().err
    assert "1797/1797" in err
    assert "1.80k" not in err
    saved = ds.drop([0]).set(1, "x", -1).save("drop one, change one")
    err = capsys.readouterr().err
    written = re.search(r"\(([\d.]+ \w+)\)", saved.build_info or "").group(1)  # type: ignore[union-attr]
    final = err.strip().split("\r")[-1]
    assert "1796/1796" in final
    assert written != "0 B"
    assert f"{written} written" in final  # the bar ends on the bytes the save line reports


def test_a_failed_build_closes_its_bar_with_the_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    features = se.Features(x=se.Value("int64"))

    def rows() -> Any:
        for i in range(2500):
            yield {"x": "bad" if i == 2100 else i}

    with pytest.raises(se.errors.StableExploreError):
        se.build(rows, features, name="f", home=tmp_path, progress=True, batch_size=1000)
    final = capsys.readouterr().err.strip().split("\r")[-1]
    assert "failed" in final
    assert "0/?" not in final
    assert "at row 2,100" in final
    assert "2,000 rows written before" in final
    assert "\x1b[31m" in final or "red" in final or "failed" in final


def notebook_outputs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """What a notebook kernel would publish (display and update_display), from a real IPython shell."""
    from IPython.core.interactiveshell import InteractiveShell

    import stable_explore.display.progress as progress

    shell = InteractiveShell.instance()
    published: list[tuple[dict[str, Any], dict[str, Any]]] = []
    monkeypatch.setattr(shell.display_pub, "publish", lambda data, metadata=None, **kw: published.append((data, kw)))
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    return published


def test_a_notebook_bar_is_html_that_outlives_its_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.display.progress import progress_bar

    published = notebook_outputs(monkeypatch)
    with progress_bar("digits", None) as on_batch:
        on_batch(1000, 2048)
        on_batch(797, 4096)
    assert published, "nothing was shown"
    for data, _ in published:  # HTML and text, never an ipywidget's model
        assert set(data) == {"text/html", "text/plain"}
    ids = {kw["transient"]["display_id"] for _, kw in published}
    assert len(ids) == 1  # one output, updated in place
    final = published[-1][0]
    assert "caching digits done: 1,797/1,797 rows" in final["text/plain"]  # the count, known once done
    assert "4.0 KiB written" in final["text/plain"]
    assert "data-done='true'" in final["text/html"]
    assert "value='1797' max='1797'" in final["text/html"]


def test_a_failed_bar_in_a_notebook_turns_red_with_the_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_explore.display.progress import progress_bar

    published = notebook_outputs(monkeypatch)
    error = se.errors.EncodingError("bad <value>")
    error.index = 1234

    def fail_after_one_batch() -> None:
        with progress_bar("digits", None) as on_batch:
            on_batch(1000, 2048)
            raise error

    with pytest.raises(se.errors.EncodingError):
        fail_after_one_batch()
    final = published[-1][0]
    assert "var(--jp-error-color1" in final["text/html"]
    shown = final["text/plain"]
    assert shown.startswith("caching digits: failed: 1,000/?")
    assert "EncodingError at row 1,234 (1,000 rows written before)" in shown
