"""The messages the shard browser sends its page: a page of cells with thumbnails, and one row's detail.

A mixin of :class:`~stable_explore.widgets.browser.ShardBrowser`. A page is one message: each cell's
key, label, shard and what is drawn over its image (boxes, masks, keypoints, an evaluation's
outcomes), with the thumbnails (and masks) as binary buffers. The detail of one row carries every
stored field as text, its place in the filter, its pending edits and its image, bounded to
``DETAIL_MAX_PX`` (or as stored, for "1:1").
"""

from __future__ import annotations

import datetime
import io
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow.compute as pc

from stable_explore.display.images import array_thumbnail, encode_thumbnail, open_thumbnail
from stable_explore.errors import ImageTooLargeError, RowIndexError
from stable_explore.schema import Array3D, ClassLabel, Image, Video
from stable_explore.schema.image_formats import sniff
from stable_explore.widgets._filters import describe_filter
from stable_explore.widgets._images import image_info, image_text, make_thumbnails, pool
from stable_explore.widgets._members import BrowserMembers
from stable_explore.widgets._overlays import boxes_per_row, image_size, keypoints_per_row, mask_overlay
from stable_explore.widgets._video import video_text

if TYPE_CHECKING:
    from collections.abc import Callable

    from stable_explore.dataset import CachedDataset
    from stable_explore.schema import Boxes, Keypoints
    from stable_explore.widgets._messages import (
        Cell,
        DetailMarks,
        DetailMarksMessage,
        DetailMessage,
        GoneMessage,
        MaskBuffer,
        Overlays,
        PageMessage,
        SentOverlays,
        VideoMarks,
    )

__all__ = ["DETAIL_MAX_PX", "FULL_MAX_PX", "PageMessages"]

DETAIL_MAX_PX = 1024
FULL_MAX_PX = 8192  # "1:1" of an image in a format browsers cannot show: converted up to this size
_TEXT_LIMIT = 200


class PageMessages(BrowserMembers):
    """The shard browser's page and detail messages (see the module)."""

    def page_message(self, page: int | None = None) -> tuple[PageMessage, list[bytes]]:
        """The page's content and thumbnail buffers: one message per page."""
        opened = self._state.opened
        rows = self.page_rows(page)
        keys = opened.ds.select(rows).keys() if len(rows) else []
        labels = opened.labels_of(self.label_column, rows).tolist() if len(rows) else []
        shard_ids = opened.shards_of(rows).tolist() if len(rows) else []
        buffers: list[bytes] = []
        cells: list[Cell] = []
        thumbs = self._thumbnails(rows) if opened.thumb_column else [None] * len(rows)
        fields = self._field_texts(rows) if not opened.thumb_column else [None] * len(rows)
        videos: list[VideoMarks] = (
            self.video_marks(rows) if opened.video_column and not opened.image_column else [{}] * len(rows)
        )
        overlays = self.overlays(rows)
        for i, row in enumerate(rows.tolist()):
            cell: Cell = {"row": row, "key": _text(keys[i], 60), "label": labels[i], "shard": shard_ids[i]}
            thumb = thumbs[i]
            if thumb is not None:
                cell["buffer"] = len(buffers)
                cell["mime"] = thumb[1]
                buffers.append(thumb[0])
            drawn = overlays[i]
            if drawn is not None:
                cell["overlays"] = _with_mask_buffers(drawn, buffers if thumb is not None else None)
            texts = fields[i]
            if texts is not None:
                cell["fields"] = texts
            marks = videos[i]  # a video's duration for its badge, or why it is broken
            if "video" in marks:
                cell["video"] = marks["video"]
            if "broken" in marks:
                cell["broken"] = marks["broken"]
            cells.append(cell)
        content: PageMessage = {
            "type": "page",
            "page": self.page if page is None else page,
            "num_pages": self.num_pages,
            "num_rows": self.num_rows,
            "cells": cells,
        }
        if not self.num_rows:
            content["empty"] = self.empty_reason()
        return content, buffers

    def empty_reason(self) -> str:
        """Why no row is shown, in words: which filters keep nothing."""
        opened = self._state.opened
        if not len(opened.ds):
            return f"{opened.ds.ref} has no rows"
        parts = []
        if self.subset:
            parts.append(f"among {self.subset}")
        if self.search.strip():
            parts.append(f"search “{self.search.strip()}” (in {opened.searched})")
        if self.shard >= 0:
            parts.append(f"shard {self.shard}")
        names = list(self.class_names)
        if self.label_filter:
            labels = [names[i] if 0 <= i < len(names) else str(i) for i in self.label_filter]
            parts.append("label " + " or ".join(labels))
        parts.extend(describe_filter(spec) for spec in self.field_filters)
        return "no rows match: " + "; ".join(parts) if parts else "no rows"

    def page_reply(self) -> tuple[PageMessage | GoneMessage, list[bytes]]:
        """The current page (or, for a version deleted since it was opened, ``gone``); then prefetch the next."""
        gone = self._gone()
        if gone is not None:
            return gone, []
        content, buffers = self.page_message()
        self._prefetch_next()
        return content, buffers

    def _snapshot(self) -> tuple[CachedDataset, Callable[[np.ndarray], np.ndarray], int]:
        """What thumbnails are made from, taken together on the kernel's thread (save() swaps them)."""
        opened = self._state.opened
        return opened.ds, opened.base_of, self.thumb_size

    def _snapshot_after_prefetch(
        self, rows: np.ndarray, snapshot: tuple[CachedDataset, Callable[[np.ndarray], np.ndarray], int] | None
    ) -> tuple[CachedDataset, Callable[[np.ndarray], np.ndarray], int]:
        """``snapshot``, or the current one after the prefetch if it is making exactly these thumbnails."""
        ds, base, size = snapshot or self._snapshot()
        pending = self._state.prefetched
        if snapshot is None and pending is not None and pending[0] == (ds.version, size, rows.tobytes()):
            pending[1].result()
        return ds, base, size

    def _thumbnails(
        self, rows: np.ndarray, snapshot: tuple[CachedDataset, Callable[[np.ndarray], np.ndarray], int] | None = None
    ) -> list[tuple[bytes, str] | None]:
        ds, base, size = self._snapshot_after_prefetch(rows, snapshot)
        keys = [(ds.version, int(b), size) for b in base(rows).tolist()]
        cache = self._state.cache
        opened = self._state.opened
        if opened.image_column is None and opened.video_column is not None:  # the videos' posters
            return self._video_thumbnails(opened, cache, rows, base(rows), size)
        found = [cache.get(k) for k in keys]
        missing = [i for i, item in enumerate(found) if item is None]
        image_column = self._state.opened.image_column
        image_column = image_column if image_column in ds.features else None
        if missing and image_column is not None:
            column = ds.select(rows[missing]).to_arrow(columns=[image_column]).column(0).to_pylist()
            made = make_thumbnails(column, ds.features[image_column], size)
            for i, thumb in zip(missing, made, strict=True):
                if thumb is not None:
                    cache.put(keys[i], *thumb)
                    found[i] = thumb
        return found

    def _prefetch_next(self) -> None:
        """Make the next page's thumbnails in the background, so "next" finds them ready."""
        state = self._state
        if not state.prefetch or state.opened.thumb_column is None or self.page + 1 >= self.num_pages:
            return
        rows = self.page_rows(self.page + 1)
        snapshot = self._snapshot()
        key = (snapshot[0].version, snapshot[2], rows.tobytes())
        state.prefetched = (key, pool("prefetch").submit(self._thumbnails, rows, snapshot))

    def overlays(self, rows: np.ndarray, mask_size: int | None = None) -> list[Overlays | None]:
        """What is drawn over each row's image: its size, and each label column's boxes or mask (see :mod:`._overlays`).

        ``{"size": [width, height], "boxes": {column: [[x0, y0, x1, y1, class, score], ...] | None},
        "masks": {column: {"png", "size", "classes"} | None}}``, corners as fractions of the stored
        image, masks made to fit ``mask_size`` px (default: the thumbnail size); None for every row
        when nothing is drawn.
        """
        fields = self.label_fields
        opened = self._state.opened
        if not fields or not len(rows) or opened.image_column is None:
            return [None] * len(rows)
        ds = opened.ds
        sizes = self._image_sizes(rows)
        names = [f["name"] for f in fields if f["kind"] == "boxes"]
        masks = [f["name"] for f in fields if f["kind"] == "mask"]
        points = [f["name"] for f in fields if f["kind"] == "keypoints"]
        table = ds.select(rows).to_arrow(columns=names + masks + points)
        for name in names:  # a row with pending box edits shows its boxes after them
            pending = self.pending_boxes(rows, name)
            if pending:
                import pyarrow as pa

                values = table.column(name).to_pylist()
                for place, boxes in pending.items():
                    values[place] = boxes
                column = pa.array(values, type=ds.features[name].arrow_type)
                table = table.set_column(table.schema.get_field_index(name), name, column)
        drawn = {name: boxes_per_row(table.column(name), cast("Boxes", ds.features[name]), sizes) for name in names}
        bound = mask_size or self.thumb_size
        painted = {name: [mask_overlay(v, bound) for v in table.column(name).to_pylist()] for name in masks}
        placed = {
            name: keypoints_per_row(table.column(name), cast("Keypoints", ds.features[name]), sizes) for name in points
        }
        evaluated = self._state.evaluation
        outcomes = evaluated.outcomes(rows) if evaluated is not None else [None] * len(rows)
        out: list[Overlays | None] = []
        for i, size in enumerate(sizes):
            entry: Overlays = {
                "size": None if size is None else list(size),
                "boxes": {name: drawn[name][i] for name in names},
            }
            outcome = outcomes[i]
            if outcome is not None:
                entry["outcomes"] = outcome
            if masks:
                entry["masks"] = {name: painted[name][i] for name in masks}
            if points:
                entry["keypoints"] = {name: placed[name][i] for name in points}
            out.append(entry)
        return out

    def _image_sizes(self, rows: np.ndarray) -> list[tuple[int, int] | None]:
        """Each row's stored image size, from the image's header, read once per version row."""
        opened = self._state.opened
        column = opened.image_column or ""
        feature = opened.ds.features[column]
        base = opened.base_of(rows).tolist()
        known = opened.image_sizes
        missing = [i for i, b in enumerate(base) if b not in known]
        if missing:
            if isinstance(feature, Array3D):
                values: list[bytes | None] = [b"" for _ in missing]
            else:
                values = opened.ds.select(rows[missing]).to_arrow(columns=[column]).column(0).to_pylist()
            for i, value in zip(missing, values, strict=True):
                known[base[i]] = image_size(value, feature)
        return [known[b] for b in base]

    def _field_texts(self, rows: np.ndarray) -> list[dict[str, str]]:
        table = self.dataset.select(rows).with_format("python")
        return [{name: _text(value, 80) for name, value in row.items()} for row in table]

    def detail_message(self, row: int, *, full: bool = False) -> tuple[DetailMessage, list[bytes]]:
        """Every field of one row, its key and shard, and its image (bounded to DETAIL_MAX_PX).

        ``full``: the image at its stored size (for "1:1"): as stored if browsers show its format.
        """
        opened = self._state.opened
        ds = opened.ds
        row = int(row)
        if not 0 <= row < len(ds):
            msg = f"row {row} is out of range for {len(ds)} rows"
            raise RowIndexError(msg)
        view = ds.select([row])
        stored = view.with_format("python")[0]
        shard, shard_row = ds.shard_of(row)
        fields = []
        for name, value in stored.items():
            feature = ds.features[name]
            if isinstance(feature, Image):
                shown = image_text(value)
            elif isinstance(feature, Array3D):
                shown = f"array {feature.shape} {feature.dtype}"
            elif isinstance(feature, Video):
                shown = video_text(value, self._video_row(row)[1] if value is not None else None)
            elif isinstance(feature, ClassLabel) and value is not None and 0 <= value < (feature.num_classes or 0):
                shown = f"{feature.int2str(value)} ({value})"
            else:
                shown = _text(value, 2000)
            fields.append([name, shown])
        buffers: list[bytes] = []
        marks = self.detail_marks(row)
        content: DetailMessage = {
            "type": "detail",
            "row": row,
            "key": _text(view.keys()[0], 200),
            "shard": shard,
            "shard_row": shard_row,
            "base_row": int(opened.base_of(np.array([row]))[0]),
            "label": int(opened.labels_of(self.label_column, np.array([row]))[0]),
            "fields": fields,
            "position": marks["position"],
            "shown": marks["shown"],
            "pending_label": marks["pending_label"],
            "dropped": marks["dropped"],
        }
        video = self.video_detail(row) if opened.video_column is not None else None
        if video is not None:
            content["video"] = video  # the page plays it, or shows a strip of its frames
        overlays = self.overlays(np.array([row], dtype=np.int64), mask_size=DETAIL_MAX_PX // 2)[0]
        if opened.image_column is not None and stored.get(opened.image_column) is not None:
            value = stored[opened.image_column]
            content["full"] = full
            content["image"] = image_info(value, ds.features[opened.image_column])
            try:
                data, mime = self._detail_image(value, full=full)
            except ImageTooLargeError as exc:  # the fields still show; the status says why the image does not
                self.status = f"row {row}: no preview: {exc}"
            else:
                content["mime"] = mime
                buffers.append(data)
        if overlays is not None:  # masks travel after the image (buffer 0), and only with it
            content["overlays"] = _with_mask_buffers(overlays, buffers if buffers else None)
        return content, buffers

    def _detail_image(self, value: bytes, *, full: bool = False) -> tuple[bytes, str]:
        feature = self.dataset.features[self._state.opened.image_column or ""]
        if isinstance(feature, Array3D):
            return encode_thumbnail(array_thumbnail(feature.decode_value(value), 512), quality=90)
        from PIL import Image as PILImage

        bound = FULL_MAX_PX if full else DETAIL_MAX_PX
        try:
            with PILImage.open(io.BytesIO(value)) as image:
                small_enough = full or max(image.size) <= bound
        except PILImage.DecompressionBombError as exc:
            msg = f"the stored image is a decompression bomb; PIL refuses to open it: {exc}"
            raise ImageTooLargeError(msg) from exc
        kind = sniff(value)
        if small_enough and kind is not None and kind.browser:
            return bytes(value), kind.mime
        return encode_thumbnail(open_thumbnail(value, bound), quality=90)

    def detail_marks(self, row: int) -> DetailMarks:
        """What the detail pane says of ``row`` beside its stored fields: pending edits, place in the filter."""
        row = int(row)
        relabelled = self.pending_labels.get(str(row))
        return {
            "row": row,
            "position": self._state.place(row),
            "shown": self.num_rows,
            "pending_label": relabelled,
            "dropped": row in set(self.dropped),
        }

    def _push_detail_marks(self) -> None:
        """The open detail pane follows pending edits and filters (without sending its image again)."""
        row = self._state.detail_row
        if row is not None and self._state.ready and 0 <= row < len(self.dataset):
            message: DetailMarksMessage = {"type": "detail_marks", **self.detail_marks(row)}
            self.send(message)

    def open_detail(self, row: int, *, full: bool = False) -> tuple[DetailMessage | GoneMessage, list[bytes]]:
        """The detail of ``row`` (what the page shows in its detail pane); the browser follows it from now on.

        A version deleted since it was opened gives ``gone`` instead.
        """
        gone = self._gone()
        if gone is not None:
            return gone, []
        reply = self.detail_message(row, full=full)
        self._state.detail_row = int(row)
        return reply

    def close_detail(self) -> None:
        """The page closed its detail pane: a save no longer refreshes it."""
        self._state.detail_row = None

    def _refresh_detail(self, key: object) -> None:
        """After the version changed: show the same key's row of the new version, or close the pane."""
        if self._state.detail_row is None:
            return
        self._state.detail_row = None
        ds = self.dataset
        if key is not None and len(ds):
            keys = ds.arrow_column("__key__") if not ds.cache_meta.is_stable_datasets_v1 else None
            if keys is not None:
                import pyarrow as pa

                found = pc.index(keys, pa.scalar(key, type=keys.type)).as_py()
                if found is not None and found >= 0:
                    self.send(*self.open_detail(int(found)))
                    return
        self.send({"type": "detail_closed", "reason": f"key {_text(key, 60)} is not in {ds.ref}"})


def _text(value: object, limit: int = _TEXT_LIMIT) -> str:
    if isinstance(value, datetime.datetime):  # pandas.Timestamp too
        text = value.isoformat(sep=" ")
    elif isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        text = str(value)
    else:
        text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _with_mask_buffers(overlays: Overlays, buffers: list[bytes] | None) -> SentOverlays:
    """``overlays`` with each mask's PNG moved into ``buffers`` (its index left as ``buffer``); no image: no masks."""
    sent: SentOverlays = {"size": overlays["size"], "boxes": overlays["boxes"]}
    if "outcomes" in overlays:
        sent["outcomes"] = overlays["outcomes"]
    if "keypoints" in overlays:
        sent["keypoints"] = overlays["keypoints"]
    masks = overlays.get("masks")
    if masks is None:
        return sent
    moved: dict[str, MaskBuffer | None] = {}
    for name, mask in masks.items():
        if mask is None or buffers is None:
            moved[name] = None
            continue
        moved[name] = {"buffer": len(buffers), "size": mask["size"], "classes": mask["classes"]}
        buffers.append(mask["png"])
    sent["masks"] = moved
    return sent
