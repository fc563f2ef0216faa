"""The static snapshots of the embedding map and the issues panel, shown where the live widget cannot be.

A saved notebook reopened on a new kernel has no model for them ("Error displaying widget: model not
found" before); each is displayed after a snapshot: the map's points as a PNG, the panel's list.
"""

from __future__ import annotations

import base64
import html
import io
import re
from pathlib import Path

import numpy as np
from PIL import Image as PILImage

import stable_explore as se
from stable_explore.widgets import EmbeddingMap
from stable_explore.widgets.issues_panel import IssuesPanel


def _dataset(tmp_path: Path) -> se.CachedDataset:
    features = se.Features(label=se.ClassLabel(names=["<b>cat</b>", "dog"]), x=se.Value("float64"))
    rows = [{"label": i % 2, "x": float(i)} for i in range(30)]
    return se.build(rows, features, name="pets", home=tmp_path, progress=False)


def test_the_map_snapshot_is_a_picture_of_its_points_coloured_by_label(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    vectors = np.column_stack([np.arange(30.0), (np.arange(30) % 2) * 10.0])
    snapshot = EmbeddingMap(ds, vectors).snapshot_html()
    assert "Embedding map, static picture: run the cell to pan, zoom and select." in snapshot
    assert "&lt;b&gt;cat&lt;/b&gt;" in snapshot  # label names escaped
    assert "<b>cat</b>" not in snapshot
    # its style hides it beside a live map, and hides the output after it only while no live map is there
    assert ".jp-OutputArea-child:has(.se-static-map):has(+ .jp-OutputArea-child .se-map)" in snapshot
    found = re.search(r'src="data:image/png;base64,([^"]+)"', snapshot)
    assert found is not None
    picture = PILImage.open(io.BytesIO(base64.b64decode(found[1]))).convert("RGB")
    assert picture.size == (480, 320)
    colours = {tuple(c) for c in np.asarray(picture).reshape(-1, 3).tolist()}
    assert {(31, 119, 180), (255, 127, 14)} <= colours  # both classes drawn


def test_the_panel_snapshot_lists_its_entries_escaped(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    from stable_explore import signals

    panel = IssuesPanel(ds, duplicates=signals.exact_duplicates(ds, columns=["label"]))
    snapshot = panel.snapshot_html()
    assert html.escape("Issues panel, static list: run the cell to show each entry's rows.") in snapshot
    assert snapshot.count("<li>") == 2  # the two label groups
    assert "<li>15 exact duplicates of row 0</li>" in snapshot
    assert ".jp-OutputArea-child:has(.se-static-issues):has(+ .jp-OutputArea-child .se-issues)" in snapshot
    # the browser's snapshot is unchanged, and never matches the other widgets' outputs
    assert "se-static-issues" not in ds.browse(page_size=24).snapshot_html()
