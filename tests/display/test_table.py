"""Listings as tables: aligned text for terminals, escaped HTML for notebooks, rows and columns for code."""

from __future__ import annotations

import pytest

from stable_explore.display.table import Table, listing_table

HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture
def table() -> Table:
    rows = [
        {"name": "pets", "rows": 3, "tags": ["clean", "latest"], "note": None},
        {"name": HOSTILE, "rows": 12345, "tags": [], "note": "a & b"},
    ]
    return Table(["name", "rows", "tags", "note"], rows, title="datasets in /tmp/home")


def test_text_is_aligned_numbers_right_and_words_left(table: Table) -> None:
    assert str(table).splitlines() == [
        "datasets in /tmp/home",
        "name                           rows  tags           note",
        "pets                              3  clean, latest",
        f"{HOSTILE}  12345                 a & b",
    ]
    assert repr(table) == str(table)


def test_an_empty_table_says_none() -> None:
    assert str(Table(["version", "rows"], [])).splitlines() == ["version  rows", "(none)"]


def test_html_escapes_every_cell_header_and_the_title() -> None:
    table = Table([HOSTILE, "n"], [{HOSTILE: HOSTILE, "n": None}], title=HOSTILE)
    page = table._repr_html_()
    assert HOSTILE not in page
    assert page.count("&lt;img src=x onerror=alert(1)&gt;") == 3
    assert page == (
        '<table class="se-table"><caption>&lt;img src=x onerror=alert(1)&gt;</caption>'
        "<thead><tr><th>&lt;img src=x onerror=alert(1)&gt;</th><th>n</th></tr></thead>"
        "<tbody><tr><td>&lt;img src=x onerror=alert(1)&gt;</td><td></td></tr></tbody></table>"
    )


def test_a_table_is_a_sequence_of_row_dicts(table: Table) -> None:
    assert len(table) == 2
    assert table[0]["tags"] == ["clean", "latest"]
    assert table[-1]["rows"] == 12345
    assert [row["name"] for row in table] == ["pets", HOSTILE]
    assert table.column("rows") == [3, 12345]
    assert table.column("missing") == [None, None]
    frame = table.to_pandas()
    assert list(frame.columns) == ["name", "rows", "tags", "note"]
    assert frame["rows"].tolist() == [3, 12345]


def test_rows_are_copied_in() -> None:
    row = {"name": "pets"}
    table = Table(["name"], [row])
    row["name"] = "changed"
    assert table[0]["name"] == "pets"


def test_listings_show_bytes_as_a_size_and_keep_the_bytes() -> None:
    table = listing_table(["name", "bytes"], [{"name": "pets", "bytes": 3 * 1024**2}, {"name": "empty"}])
    assert table.columns == ["name", "size"]
    assert table[0]["bytes"] == 3 * 1024**2  # for code that sums or sorts
    assert table[0]["size"].replace("iB", "B") == "3.0 MB"
    assert "size" not in table[1]  # a row without bytes (an unreadable version) shows no size
    assert str(table).splitlines()[0] == "name   size"
