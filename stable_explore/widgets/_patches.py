"""``ds.patches("objects").browse()``: the shard browser over one tile per box, edits made on the source's boxes.

One browser, not a second widget: the browser pages, filters, sorts and draws histograms over the rows
of a :class:`CachedDataset`, so the patches view gives it one. :func:`index_dataset` writes the
view's table (class, score, area, image row, box index, key; no pixels) as a small version in a
temporary home, a second per 100,000 boxes at most; every filter (the class chips, score and area
ranges), sort and histogram of the browser then works on boxes unchanged. What differs is said by
:class:`PatchesBrowser`, a :class:`ShardBrowser` with four overrides:

- a tile's thumbnail is the box's crop, cut from its image when its page is first asked (each image
  decoded once for all its boxes on the page) and kept in the browser's thumbnail cache;
- "relabel" gives the selected boxes a class and "drop flagged" deletes the flagged boxes, as
  :meth:`Draft.relabel_boxes` / :meth:`Draft.drop_boxes` of the *source* dataset (pass ``draft=`` to
  go on from a draft made in code or in the main browser: :attr:`PatchesBrowser.draft` is that draft);
- a tile shows its pending class and a pending delete like a row's;
- "save version" writes the source's draft as its new version and browses that version's boxes.

Examples
--------
>>> import tempfile, numpy as np, stable_explore as se
>>> features = se.Features(image=se.Image(), objects=se.Boxes(names=["cat", "dog"]))
>>> rows = [{"image": np.zeros((20, 30, 3), np.uint8),
...          "objects": [{"bbox": [1, 2, 10, 5], "category": "dog"}, {"bbox": [0, 0, 4, 4], "category": "cat"}]}]
>>> ds = se.build(rows, features, name="pets", home=tempfile.mkdtemp(), progress=False)
>>> browser = ds.patches("objects").browse()
>>> browser.label_filter = [1]
>>> browser.num_rows
1
>>> browser.selected = [0]
>>> browser.relabel_selection("cat")
>>> browser.save("a cat").arrow_column("objects").to_pylist()[0][0]["category"]
0
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stable_explore.errors import EmptyBuildWarning, InvalidOptionError
from stable_explore.widgets._state import Opened
from stable_explore.widgets.browser import ShardBrowser

if TYPE_CHECKING:
    from collections.abc import Callable

    from stable_explore.dataset import CachedDataset
    from stable_explore.dataset._patches import Patches
    from stable_explore.versioning.edits import Draft
    from stable_explore.widgets._messages import DetailMessage, PageMessage

__all__ = ["PatchesBrowser", "index_dataset"]

CROP = "crop"
"""What the patches browser calls the thumbnails' source (no column holds the crops: they are cut when asked)."""


def index_dataset(patches: Patches, home: str | None = None) -> CachedDataset:
    """The patches' table as a dataset the browser pages through: one row per box, no pixels.

    Columns: ``category`` (a ClassLabel of the Boxes column's names), ``score`` (when any box has
    one), ``area`` (width x height in the column's units), ``row`` and ``box`` (where the box is in
    the source: what ``relabel_boxes`` and ``drop_boxes`` take) and ``key``. Written in ``home`` (default:
    a new temporary folder), with the source's version in its metadata (so two sources never share a
    thumbnail).
    """
    from stable_explore.catalog import BuildOptions, build_version, open_catalog
    from stable_explore.dataset import CachedDataset
    from stable_explore.dataset._patches import _corners
    from stable_explore.schema import ClassLabel, Feature, Features, Value
    from stable_explore.storage.read.open_meta import read_sharded_cache_meta

    table = patches.table
    names = list(patches.feature.names)
    codes = pc.index_in(table.column("category"), value_set=pa.array(names, pa.string()))
    corners = _corners(
        np.asarray(
            pc.list_flatten(table.column("bbox").combine_chunks()).to_numpy(zero_copy_only=False), dtype=np.float64
        ).reshape(-1, 4),
        patches.feature.format,
    )
    columns: dict[str, pa.Array] = {"category": pa.array(codes.to_numpy(zero_copy_only=False), pa.int64())}
    spec: dict[str, Feature] = {"category": ClassLabel(names=names)}
    if table.column("score").null_count < len(table):
        columns["score"] = table.column("score").cast(pa.float32()).combine_chunks()
        spec["score"] = Value("float32")
    columns["area"] = pa.array((corners[:, 2] - corners[:, 0]) * (corners[:, 3] - corners[:, 1]), pa.float64())
    columns["row"] = table.column("row").combine_chunks()
    columns["box"] = table.column("box").combine_chunks()
    columns["key"] = pc.cast(table.column("key"), pa.string()).combine_chunks()
    spec.update(area=Value("float64"), row=Value("int64"), box=Value("int64"), key=Value("string"))
    source = patches.dataset
    options = BuildOptions(
        description=f"the {patches.column!r} boxes of {source.ref}",
        metadata={"source": source.version, "column": patches.column, "rows": _rows_digest(source)},
        allow_empty=True,  # a dataset without boxes browses an empty grid
    )
    home = home if home is not None else tempfile.mkdtemp(prefix="stable-explore-patches-")
    with warnings.catch_warnings():  # no boxes: an empty grid, nothing to warn of
        warnings.simplefilter("ignore", EmptyBuildWarning)
        made = build_version(open_catalog(home), "patches", [pa.table(columns)], Features(spec), options).ref
    return CachedDataset(
        read_sharded_cache_meta(made.cache_dir), name=made.name, version=made.version_id, home=made.home
    )


def _rows_digest(ds: CachedDataset) -> str:
    """Which rows of the version ``ds`` is (a view's rows change what the patches' row numbers mean)."""
    if not ds.is_view:
        return "all"
    import hashlib

    return hashlib.sha256(np.asarray(ds.base_rows(), dtype=np.int64).tobytes()).hexdigest()[:16]


def _same_rows(a: CachedDataset, b: CachedDataset) -> bool:
    """Whether ``a`` and ``b`` are the same rows of the same version (row numbers mean the same images)."""
    return a.version == b.version and len(a) == len(b) and _rows_digest(a) == _rows_digest(b)


@dataclass
class PatchOpened(Opened):
    """The patches' index dataset, opened: its thumbnails are crops (see :data:`CROP`), not an image column."""

    @classmethod
    def of(cls, ds: CachedDataset) -> PatchOpened:
        """Open the index; a box's image row and index place it, but are no values to filter or plot."""
        opened = cast("PatchOpened", super().of(ds))
        opened.kinds = {name: kind for name, kind in opened.kinds.items() if name not in ("row", "box")}
        return opened

    @property
    def thumb_column(self) -> str | None:
        return CROP


class PatchesBrowser(ShardBrowser):
    """The shard browser over a :class:`~stable_explore.dataset._patches.Patches` view: one crop tile per box.

    Get one with ``ds.patches("objects").browse()``. The class chips filter by the box's class, the
    value filters and sort take ``score`` and ``area``; select tiles and "relabel" them, or flag them
    (``x``) and "drop flagged"; the edits are the source dataset's pending box edits
    (:attr:`draft`), and "save version" (or :meth:`save`) writes them as its new version.

    Attributes
    ----------
    patches:
        The patches browsed (of the last version saved, after a save).
    """

    def __init__(self, patches: Patches, *, draft: Draft | None = None, **kwargs: Any) -> None:
        if draft is not None and not _same_rows(draft.origin, patches.dataset):
            msg = (
                f"browse(draft=): the draft's edits are of {draft.origin.ref} ({len(draft.origin):,} rows), the "
                f"patches of {patches.dataset.ref} ({len(patches.dataset):,} rows); its row numbers would name other "
                "images. Make the patches of the dataset the draft started from: draft.origin.patches(...)"
            )
            raise InvalidOptionError(msg)
        self.patches = patches
        self._crops_of: dict[str, Patches] = {}
        self._home = tempfile.mkdtemp(prefix="stable-explore-patches-")
        # the index versions go when the browser is closed, collected, or Python exits
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._home, True)
        index = index_dataset(patches, self._home)
        self._crops_of[index.version] = patches
        super().__init__(index, **kwargs)
        if draft is not None:
            self._set_draft(draft)

    @classmethod
    def _open(cls, dataset: CachedDataset) -> Opened:
        return PatchOpened.of(dataset)

    def _described(self) -> dict[str, Any]:
        described = super()._described()
        source = self.patches.dataset
        images = len(pc.unique(self.patches.table.column("row"))) if len(self.patches) else 0
        described["title"] = f"{source.ref} · {self.patches.column} · {len(self.patches):,} boxes on {images:,} images"
        return described

    # -- tiles -------------------------------------------------------------------

    def _thumbnails(
        self, rows: np.ndarray, snapshot: tuple[CachedDataset, Callable[[np.ndarray], np.ndarray], int] | None = None
    ) -> list[tuple[bytes, str] | None]:
        from stable_explore.display.images import encode_thumbnail

        ds, base, size = self._snapshot_after_prefetch(rows, snapshot)
        positions = base(rows)
        keys = [(ds.version, int(b), size) for b in positions.tolist()]
        cache = self._state.cache
        found = [cache.get(k) for k in keys]
        missing = [i for i, item in enumerate(found) if item is None]
        patches = self._crops_of.get(ds.version)
        if missing and patches is not None:
            crops = patches.select(positions[missing]).crops(thumbnail_size=size)
            for i, crop in zip(missing, crops, strict=True):
                if crop is None:
                    continue
                if crop.mode not in ("RGB", "RGBA", "L"):
                    crop = crop.convert("RGB")
                found[i] = thumb = encode_thumbnail(crop)
                cache.put(keys[i], *thumb)
        return found

    def page_message(self, page: int | None = None) -> tuple[PageMessage, list[bytes]]:
        """The page of crop tiles; each says where its box is (image row, box) and its score, if any."""
        content, buffers = super().page_message(page)
        if content["cells"]:
            rows = np.array([cell["row"] for cell in content["cells"]], dtype=np.int64)
            table = self.dataset.select(rows).to_arrow(
                columns=[c for c in ("row", "box", "score") if c in self.dataset.features]
            )
            for cell, where in zip(content["cells"], table.to_pylist(), strict=True):
                cell["key"] = f"{cell['key']} · box {where['box']}"
                score = where.get("score")
                if score is not None:
                    cell["note"] = f"{score:.2f}"
        return content, buffers

    def detail_message(self, row: int, *, full: bool = False) -> tuple[DetailMessage, list[bytes]]:
        """The detail of one box: its fields and its crop at its stored size (bounded to DETAIL_MAX_PX)."""
        import io

        from stable_explore.widgets._pages import DETAIL_MAX_PX

        content, buffers = super().detail_message(row, full=full)
        patches = self._crops_of.get(self.dataset.version)
        crop = patches.select([int(row)]).crops()[0] if patches is not None else None
        if crop is not None and not buffers:
            where = patches.table.slice(int(row), 1).to_pylist()[0] if patches is not None else {}
            crop.thumbnail((DETAIL_MAX_PX, DETAIL_MAX_PX))
            data = io.BytesIO()
            crop.save(data, format="PNG")  # a crop is small: its pixels as they are
            content["full"] = full
            content["mime"] = "image/png"
            content["image"] = {
                "width": crop.width,
                "height": crop.height,
                "format": f"crop of image row {where.get('row')}, box {where.get('box')}",
                "bytes": data.tell(),
            }
            buffers.append(data.getvalue())
        return content, buffers

    # -- edits: the source's boxes --------------------------------------------------

    def _where(self, rows: list[int]) -> dict[int, list[int]]:
        """Patches (rows of the index) as ``{source row: [box, ...]}``."""
        table = self.dataset.select(sorted(rows)).to_arrow(columns=["row", "box"])
        out: dict[int, list[int]] = {}
        for row, box in zip(table.column("row").to_pylist(), table.column("box").to_pylist(), strict=True):
            out.setdefault(int(row), []).append(int(box))
        return out

    def _source_draft(self) -> Draft:
        from stable_explore.versioning.edits import Draft

        return self._state.draft or Draft(self.patches.dataset)

    def relabel_selection(self, label: str | int) -> None:
        """Give every selected box the class ``label``: a pending ``relabel_boxes`` of the source dataset."""
        if not self.selected:
            self.status = "select boxes to relabel"
            return
        code = self.patches.feature.category_index(label)
        changes = {row: dict.fromkeys(boxes, code) for row, boxes in self._where(list(self.selected)).items()}
        self._set_draft(self._source_draft().relabel_boxes(changes, column=self.patches.column))
        self.status = f"{len(self.selected)} box(es) → {self.patches.feature.names[code]} (pending)"

    def drop_flagged(self) -> None:
        """Delete every flagged box: a pending ``drop_boxes`` of the source dataset."""
        if not self.flagged:
            self.status = "nothing flagged to drop"
            return
        count = len(self.flagged)
        draft = self._source_draft().drop_boxes(self._where(list(self.flagged)), column=self.patches.column)
        self._set_draft(draft)
        self.flagged = []
        self.status = f"{count} box(es) deleted (pending)"

    def _set_draft(self, draft: Draft | None) -> None:
        """The source's draft; each tile whose box it relabels or deletes shows that, as a row's would."""
        self._state.draft = draft
        edits = draft.pending_edits if draft is not None else None
        relabelled: dict[tuple[int, int], int] = {}
        dropped: set[tuple[int, int]] = set()
        if edits is not None:
            for (row, column), ops in edits.box_edits.items():
                if column != self.patches.column:
                    continue
                for op in ops:
                    if op[0] == "relabel":
                        relabelled[(row, int(op[1]))] = self.patches.feature.category_index(op[2])
                    elif op[0] == "drop":
                        dropped.add((row, int(op[1])))
        touched = {row for row, _ in relabelled} | {row for row, _ in dropped}
        pending: dict[str, int] = {}
        gone: list[int] = []
        if touched:
            index = self._state.opened.ds.with_format("arrow")
            rows = index.column("row").to_numpy()
            boxes = index.column("box").to_numpy()
            for place in np.flatnonzero(np.isin(rows, np.fromiter(touched, dtype=np.int64))).tolist():
                where = (int(rows[place]), int(boxes[place]))
                if where in dropped:
                    gone.append(place)
                elif where in relabelled:
                    pending[str(place)] = relabelled[where]
        self.dropped = sorted(gone)
        self.pending_labels = pending
        self.pending = edits.summary() if edits else ""
        self._push_detail_marks()

    def save(self, message: str | None = None, **options: Any) -> CachedDataset:
        """Write the source's pending box edits as its new version; browse that version's boxes. Returns it."""
        state = self._state
        if state.draft is None:
            msg = "no pending box edits to save (relabel selected boxes or drop flagged ones first)"
            raise InvalidOptionError(msg)
        summary = self.pending
        old = self.patches.dataset
        saved = state.draft.save(message, **{"progress": False, **options})
        self.patches = saved.patches(self.patches.column, image=self.patches.image_column)
        index = index_dataset(self.patches, self._home)
        self._crops_of = {index.version: self.patches}
        state.detail_row = None
        self._browse_saved(index, PatchOpened.of(index))
        if saved.version == old.version:
            self.status = f"nothing to save: the edits change no box of {old.ref}"
        else:
            self.status = f"saved {saved.ref}: {len(self.patches):,} boxes ({summary})"
        self.send({"type": "detail_closed", "reason": f"saved {saved.ref}"})
        self._update_snapshot()
        return saved

    def _card_html(self) -> str:
        """Where the widget cannot run (GitHub, a reopened notebook): the strip of the first crops."""
        return self.patches._repr_html_()

    def close(self) -> None:
        """Close the widget and remove the boxes' index (its temporary folder)."""
        super().close()
        cleanup = getattr(self, "_cleanup", None)  # (none when __init__ refused its arguments)
        if cleanup is not None:
            cleanup()

    def __repr__(self) -> str:
        return f"PatchesBrowser({self.patches!r}, {self.num_rows:,} boxes shown, {len(self.selected)} selected)"
