"""The issues panel: duplicate groups and suspected label errors, each a click away from its rows.

The list (small state) is a synced traitlet; a click asks the kernel for that entry, which answers
with one custom message whose binary buffers are the group's thumbnails (shown side by side), and
points a shard browser at those rows when one is attached (``browser.show_rows``). What an entry holds
and what a click does live here in Python, so they are tested without a browser.

Examples
--------
>>> import tempfile, numpy as np, stable_explore as se
>>> from stable_explore.signals import exact_duplicates
>>> from stable_explore.widgets.issues_panel import IssuesPanel
>>> images = [np.full((4, 4), v, dtype=np.uint8) for v in (1, 2, 1)]
>>> ds = se.build([{"image": im} for im in images], se.Features(image=se.Image()), name="d",
...               home=tempfile.mkdtemp(), progress=False)
>>> panel = IssuesPanel(ds, duplicates=exact_duplicates(ds))
>>> [(e["kind"], e["rows"]) for e in panel.entries]
[('duplicates', [0, 2])]
>>> panel.show(0)
[0, 2]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import anywidget
import numpy as np
import traitlets as t
from typing_extensions import NotRequired, TypedDict

from stable_explore.errors import InvalidOptionError
from stable_explore.schema import ClassLabel, Image
from stable_explore.widgets._esm import STATIC, widget_module
from stable_explore.widgets._images import make_thumbnails
from stable_explore.widgets._requests import OK, Buffers, Commands, Reply, Request
from stable_explore.widgets._snapshot import display_with_snapshot, snapshot_html

if TYPE_CHECKING:
    import pyarrow as pa

    from stable_explore.dataset import CachedDataset
    from stable_explore.widgets.browser import ShardBrowser

__all__ = ["IssuesPanel"]

_SNAPSHOT_ENTRIES = 20  # entries the static list of a saved notebook names

MAX_ENTRIES = 500  # entries listed per kind; the tables themselves hold them all
MAX_SHOWN = 24  # thumbnails of one group shown side by side
EXAMPLES = 6  # rows of the suggested class shown beside a suspected label error


class IssueEntry(TypedDict):
    """One entry of the panel's list (its ``entries`` trait): a duplicate group or a suspected label error."""

    kind: Literal["duplicates", "label"]
    title: str
    rows: list[int]
    index: NotRequired[int]  # its place in the list, set once every entry is listed
    suggested: NotRequired[object]  # a suspected label error: the class its neighbours suggest


class GroupItem(TypedDict):
    """One tile of a shown group: its row, key, label and thumbnail (a buffer of the message)."""

    row: int
    key: str
    label: str
    example: bool  # a row of the suggested class, shown beside a suspected label error
    buffer: NotRequired[int]
    mime: NotRequired[str]


class GroupMessage(TypedDict):
    """The rows of one entry, pushed to the page (``type: "group"``); ``more`` rows are not shown."""

    type: Literal["group"]
    index: int
    items: list[GroupItem]
    more: int


def _text(value: object, limit: int = 60) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class IssuesPanel(anywidget.AnyWidget):
    """A list of duplicate groups and suspected label errors; a click shows the rows side by side.

    A suspected label error is shown beside a few rows labelled as the suggested class.

    Parameters
    ----------
    dataset
        The dataset the signals were computed on (their ``row`` columns are its positions).
    duplicates
        :func:`~stable_explore.signals.exact_duplicates` or :func:`~stable_explore.signals.near_duplicates`
        results (one table, or several: each is listed under its own heading).
    label_issues
        :func:`~stable_explore.signals.label_issues` or :func:`~stable_explore.signals.neighbor_label_issues`.
    browser
        A shard browser of the same dataset: a click filters its grid to the entry's rows
        (``browser.show_rows``).
    on_show
        Called with (rows, title) on every click, for code of your own.

    Attributes
    ----------
    entries
        What the panel lists: ``{"index", "kind", "title", "rows"}`` per entry.
    active
        The entry last shown (-1: none).
    shown_rows
        Its rows.
    """

    _esm = widget_module("issues.js")  # with the static/lib/ modules it imports inlined
    _css = STATIC / "issues.css"

    title = t.Unicode("").tag(sync=True)
    entries = t.List(t.Dict()).tag(sync=True)
    active = t.Int(-1).tag(sync=True)
    shown_rows = t.List(t.Int()).tag(sync=True)
    status = t.Unicode("").tag(sync=True)
    thumb_size = t.Int(96).tag(sync=True)

    def __init__(
        self,
        dataset: CachedDataset,
        *,
        duplicates: pa.Table | list[pa.Table] | None = None,
        label_issues: pa.Table | None = None,
        browser: ShardBrowser | None = None,
        on_show: Callable[[list[int], str], object] | None = None,
        thumb_size: int = 96,
        **kwargs: object,
    ) -> None:
        self._ds = dataset
        self._labels: np.ndarray | None = None
        self.browser = browser
        self.on_show = on_show
        tables = [] if duplicates is None else [duplicates] if not isinstance(duplicates, list) else duplicates
        entries = [entry for table in tables for entry in _duplicate_entries(table, len(dataset))]
        if label_issues is not None:
            entries += _label_entries(label_issues, len(dataset))
        for index, entry in enumerate(entries):
            entry["index"] = index
        counts = {kind: sum(e["kind"] == kind for e in entries) for kind in ("duplicates", "label")}
        title = (
            f"{dataset.ref} · {counts['duplicates']:,} duplicate group(s) · "
            f"{counts['label']:,} suspected label error(s)"
        )
        super().__init__(entries=entries, title=title, thumb_size=thumb_size, **kwargs)
        self.on_msg(self._on_message)

    def snapshot_html(self) -> str:
        """The static list shown where the live panel cannot be drawn (a saved notebook reopened on a new kernel).

        The panel's title and the titles of its first entries, with a note that running the cell brings
        the live panel back.
        """
        import html

        shown = self.entries[:_SNAPSHOT_ENTRIES]
        items = "".join(f"<li>{html.escape(str(entry['title']))}</li>" for entry in shown)
        more = len(self.entries) - len(shown)
        rest = f"<div>… and {more:,} more</div>" if more > 0 else ""
        card = f'<div style="font-weight:600">{html.escape(self.title)}</div><ul>{items}</ul>{rest}'
        note = "Issues panel, static list: run the cell to show each entry's rows."
        return snapshot_html(card, self.model_id, note=note, live="se-issues", marker="se-static-issues")

    def _ipython_display_(self, **kwargs: Any) -> None:
        """Two outputs: the static list (:meth:`snapshot_html`), then the live panel (see ``widgets/_snapshot.py``)."""
        display_with_snapshot(self.snapshot_html(), self._repr_mimebundle_(**kwargs))

    def show(self, index: int) -> list[int]:
        """Show entry ``index``: its rows side by side here, and in the attached browser's grid."""
        if not 0 <= index < len(self.entries):
            msg = f"no entry {index}: the panel lists {len(self.entries)} (0 to {len(self.entries) - 1})"
            raise InvalidOptionError(msg)
        entry = self.entries[index]
        rows: list[int] = list(entry["rows"])
        self.active = index
        self.shown_rows = rows
        if self.browser is not None:
            shown = getattr(self.browser, "show_rows", None)
            if shown is not None:
                shown(rows, entry["title"])
            else:  # a browser without show_rows: select the rows in its grid
                self.browser.selected = rows
        if self.on_show is not None:
            self.on_show(rows, entry["title"])
        self._send_group(index, rows, self._examples(entry.get("suggested"), rows))
        return rows

    def _examples(self, suggested: object, rows: list[int]) -> list[int]:
        """For a suspected label error: a few rows labelled as the suggestion, to compare with side by side."""
        label = self._ds.features.first_of(ClassLabel)
        if not isinstance(suggested, str) or label is None:
            return []
        feature = self._ds.features[label]
        assert isinstance(feature, ClassLabel)
        if suggested not in (feature.names or []):
            return []
        if self._labels is None:
            self._labels = self._ds.arrow_column(label).to_numpy(zero_copy_only=False)
        wanted = feature.str2int(suggested)
        matches = np.flatnonzero(self._labels == wanted)
        return [int(r) for r in matches[:EXAMPLES] if int(r) not in rows]

    def _send_group(self, index: int, rows: list[int], examples: list[int]) -> None:
        shown = rows[:MAX_SHOWN] + examples
        features = self._ds.features
        image = features.first_of(Image)
        label = features.first_of(ClassLabel)
        view = self._ds[shown]
        keys = view.keys()
        labels: list[str] = []
        if label is not None:
            feature = features[label]
            assert isinstance(feature, ClassLabel)
            values = view.arrow_column(label).to_pylist()
            labels = ["" if v is None else str(feature.int2str(int(v))) for v in values]
        thumbs: list[tuple[bytes, str] | None] = []
        if image is not None:
            thumbs = make_thumbnails(view.arrow_column(image).to_pylist(), features[image], self.thumb_size)
        items: list[GroupItem] = []
        buffers: list[bytes] = []
        for place, row in enumerate(shown):
            thumb = thumbs[place] if thumbs else None
            item: GroupItem = {
                "row": row,
                "key": _text(keys[place]),
                "label": labels[place] if labels else "",
                "example": place >= len(shown) - len(examples),
            }
            if thumb is not None:
                item["buffer"] = len(buffers)
                item["mime"] = thumb[1]
                buffers.append(thumb[0])
            items.append(item)
        more = len(rows) - min(len(rows), MAX_SHOWN)
        message: GroupMessage = {"type": "group", "index": index, "items": items, "more": more}
        self.send(message, buffers)

    def _on_message(self, widget: object, content: object, buffers: Buffers | None) -> None:
        """A request from the page (see :data:`COMMANDS`): run it and send the reply."""
        COMMANDS.answer(self, content, buffers)


# What the panel's page asks (the request/reply layer is :mod:`._requests`); the group an entry shows is
# pushed, as ``show`` called in code pushes it.
COMMANDS = Commands("issues panel")


@COMMANDS.command("open")
def _open(panel: IssuesPanel, msg: Request, buffers: Buffers) -> Reply:
    """A click on an entry: show its rows here and in the attached browser."""
    panel.show(int(msg["index"]))
    return OK, []


def _duplicate_entries(table: pa.Table, n: int) -> list[IssueEntry]:
    near = "distance" in table.column_names
    entries: list[IssueEntry] = []
    groups = table.column("group").to_pylist()
    rows = table.column("row").to_pylist()
    _check_rows(rows, n, "duplicates")
    members: dict[int, list[int]] = {}
    for group, row in zip(groups, rows, strict=True):
        members.setdefault(group, []).append(row)
    for group, group_rows in list(members.items())[:MAX_ENTRIES]:
        what = "near duplicates" if near else "exact duplicates"
        entries.append({"kind": "duplicates", "title": f"{len(group_rows)} {what} of row {group}", "rows": group_rows})
    return entries


def _label_entries(table: pa.Table, n: int) -> list[IssueEntry]:
    rows = table.column("row").to_pylist()
    _check_rows(rows, n, "label_issues")
    labels = table.column("label").to_pylist()
    suggested = table.column("suggested").to_pylist()
    entries: list[IssueEntry] = []
    for row, label, better in list(zip(rows, labels, suggested, strict=True))[:MAX_ENTRIES]:
        title = f"row {row}: labelled {_text(label, 30)}, looks like {_text(better, 30)}"
        entries.append({"kind": "label", "title": title, "rows": [row], "suggested": better})
    return entries


def _check_rows(rows: list[int], n: int, name: str) -> None:
    bad = next((r for r in rows if not 0 <= r < n), None)
    if bad is not None:
        msg = f"{name} names row {bad}, but the dataset has {n} rows: pass the table computed on this dataset"
        raise InvalidOptionError(msg)
