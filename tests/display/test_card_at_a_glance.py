"""Issue 27's card and table fixes: a strip sampled across labels, label counts as before/after bars,
overlaid histograms of number columns, versions tables with short timestamps and unbroken sizes."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

import stable_explore as se
from stable_explore.display.card import strip_rows


def sorted_digits(tmp_path: Path) -> se.CachedDataset:
    # rows sorted by class, as many real sources are: the first eight rows are all one class
    features = se.Features(image=se.Image(), label=se.ClassLabel(names=["a", "b", "c"]), score=se.Value("float32"))
    rows = [
        {"image": np.full((8, 8), 40 * (i // 20), dtype=np.uint8), "label": i // 20, "score": float(i)}
        for i in range(60)
    ]
    return se.build(rows, features, name="sorted", home=tmp_path, progress=False)


def test_the_strip_samples_across_labels(tmp_path: Path) -> None:
    ds = sorted_digits(tmp_path)
    rows = strip_rows(ds)
    assert rows == [0, 20, 40, 1, 21, 41, 2, 22]
    assert {ds[r]["label"] for r in rows} == {0, 1, 2}
    html = ds._repr_html_()
    assert html.count("<figcaption>a</figcaption>") == 3
    assert html.count("<figcaption>b</figcaption>") == 3
    assert html.count("<figcaption>c</figcaption>") == 2
    unlabelled = se.build([{"x": i} for i in range(100)], se.Features(x=se.Value("int64")), name="n",
                          home=tmp_path, progress=False)  # fmt: skip
    assert strip_rows(unlabelled) == [0, 14, 28, 42, 57, 71, 85, 99]  # spread over the rows


def test_the_diff_shows_label_bars_and_overlaid_histograms(tmp_path: Path) -> None:
    ds = sorted_digits(tmp_path)
    clean = ds.drop(list(range(10))).relabel({45: "a"}).save(message="fewer a", progress=False)
    html = se.compare(ds, clean)._repr_html_()
    bars = html[html.index("data-testid='se-diff-bars'") :]
    widths = re.findall(r"data-testid='se-diff-(before|after)' style='[^']*width:(\d+)px", bars)[:6]
    # a: 20 -> 11, b: 20 -> 20, c: 20 -> 19; the longest bar is 160 px
    assert widths == [("before", "160"), ("after", "88"), ("before", "160"), ("after", "160"),
                      ("before", "160"), ("after", "152")]  # fmt: skip
    assert "-9" in bars
    assert html.count("data-testid='se-diff-hist'") == 1  # score: the one number column
    assert "score (grey: before, blue: after)" in html


def test_versions_table_times_to_the_second_and_sizes_on_one_line(tmp_path: Path) -> None:
    ds = sorted_digits(tmp_path)
    table = se.versions("sorted", home=tmp_path)
    created = table[0]["created"]
    assert re.search(r"\.\d{6}", created), "the row keeps the stored timestamp"
    html = table._repr_html_()
    assert created not in html
    assert re.search(r"<td style='white-space:nowrap'>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d( UTC)?</td>", html)
    size = table[0]["size"]
    assert f"<td style='white-space:nowrap'>{size}</td>" in html
    assert ds.version[:4] in html
