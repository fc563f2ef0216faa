"""The static HTML card of a dataset: header, schema, label counts, a strip of thumbnails.

It is what a notebook shows without a live kernel (GitHub, nbviewer), so it
is self-contained (inline thumbnails, inline styles) and escapes every piece
of user text. It decodes only the few images of the strip.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from stable_explore.display.images import data_uri, encode_thumbnail, open_thumbnail
from stable_explore.schema import ClassLabel, Image, Video

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset
    from stable_explore.dataset._patches import Patches
    from stable_explore.dataset._reprs import DatasetSummary
    from stable_explore.versioning.compare import Diff, Gallery, ShardDiff

STRIP_LENGTH = 8
GALLERY_PAGE = 24
CHANGED_ROWS_SHOWN = 12
THUMB_PX = 64
_MAX_LABELS_SHOWN = 12


# JupyterLab's theme variables, with light fallbacks where they are not defined (GitHub, nbviewer)
FG = "var(--jp-ui-font-color1, #1f2328)"
FG_MUTED = "var(--jp-ui-font-color2, #555)"
BORDER = "var(--jp-border-color2, #ccc)"
BG = "var(--jp-layout-color1, transparent)"
BAR = "var(--jp-brand-color1, #6a8fd6)"
WARN = "var(--jp-warn-color0, #b35900)"
ERROR = "var(--jp-error-color1, #b00)"
CARD_STYLE = (
    f"font-family:var(--jp-ui-font-family, sans-serif);font-size:13px;color:{FG};background:{BG};"
    f"border:1px solid {BORDER};border-radius:6px;padding:8px"
)


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _schema_rows(ds: CachedDataset) -> str:
    rows = []
    for name, feature in ds.features.items():
        rows.append(f"<tr><td><code>{_esc(name)}</code></td><td>{_esc(repr(feature))}</td></tr>")
    return "".join(rows)


def _label_rows(ds: CachedDataset) -> tuple[str, str]:
    label_column = ds.features.first_of(ClassLabel)
    if label_column is None or len(ds) == 0:
        return "", ""
    counts = ds.label_counts(label_column)
    top = sorted(counts.items(), key=lambda item: -item[1])[:_MAX_LABELS_SHOWN]
    peak = max((c for _, c in top), default=0) or 1
    rows = "".join(
        f"<tr><td>{_esc(label)}</td><td style='text-align:right'>{count:,}</td>"
        f"<td><div style='background:{BAR};height:8px;width:{int(120 * count / peak)}px'></div></td></tr>"
        for label, count in top
    )
    more = len(counts) - len(top)
    if more > 0:
        rows += f"<tr><td colspan='3'>... {more} more classes</td></tr>"
    return label_column, rows


def strip_rows(ds: CachedDataset, length: int = STRIP_LENGTH) -> list[int]:
    """Which rows the card's strip shows: one of each class in turn (a sample across labels), else spread out.

    Examples
    --------
    >>> import tempfile, stable_explore as se
    >>> ds = se.build([{"label": int(i >= 20)} for i in range(30)],
    ...               se.Features(label=se.ClassLabel(names=["a", "b"])), name="s", home=tempfile.mkdtemp(),
    ...               progress=False)
    >>> strip_rows(ds, 4)
    [0, 20, 1, 21]
    """
    size = len(ds)
    if size <= length:
        return list(range(size))
    label_column = ds.features.first_of(ClassLabel)
    if label_column is None:
        return [round(i * (size - 1) / (length - 1)) for i in range(length)]
    import numpy as np

    labels = np.asarray(ds.arrow_column(label_column).fill_null(-1).to_numpy(zero_copy_only=False))
    order = np.argsort(labels, kind="stable")  # rows grouped by class, in row order within each
    classes, starts, counts = np.unique(labels[order], return_index=True, return_counts=True)
    chosen: list[int] = []
    round_ = 0
    while len(chosen) < length:  # the first row of each class, then the second of each, ...
        for start, count in zip(starts.tolist(), counts.tolist(), strict=True):
            if round_ < count and len(chosen) < length:
                chosen.append(int(order[start + round_]))
        round_ += 1
    del classes
    return chosen


def _strip(ds: CachedDataset) -> str:
    image_column = ds.features.first_of(Image)
    video = image_column is None  # a set of videos shows their posters (display/video.py)
    if video:
        image_column = ds.features.first_of(Video)
    if image_column is None or len(ds) == 0:
        return ""
    head = ds.select(strip_rows(ds))
    table = head.to_arrow([image_column, *[n for n, f in ds.features.items() if isinstance(f, ClassLabel)][:1]])
    label_feature = next((f for f in ds.features.values() if isinstance(f, ClassLabel)), None)
    labels = table.column(1).to_pylist() if table.num_columns > 1 else [None] * table.num_rows
    cells = []
    for data, label in zip(table.column(0).to_pylist(), labels, strict=True):
        caption = ""
        if label is not None and label_feature is not None and 0 <= label < (label_feature.num_classes or 0):
            caption = _esc(label_feature.int2str(label))
        if data is None:
            cells.append(f"<figure style='margin:2px'><div>(none)</div><figcaption>{caption}</figcaption></figure>")
            continue
        style = "margin:2px;text-align:center;font-size:11px"
        if video:
            from stable_explore.display.video import poster_html

            poster = poster_html(data, THUMB_PX, ERROR)
            cells.append(f"<figure style='{style}'>{poster}<figcaption>{caption}</figcaption></figure>")
            continue
        try:
            thumb, mime = encode_thumbnail(open_thumbnail(data, THUMB_PX))
            img = f"<img src='{data_uri(thumb, mime)}' style='max-width:{THUMB_PX}px;max-height:{THUMB_PX}px' alt=''>"
        except Exception:  # noqa: BLE001 - an unreadable image must not break the card
            img = f"<div style='color:{ERROR}'>unreadable</div>"
        cells.append(f"<figure style='{style}'>{img}<figcaption>{caption}</figcaption></figure>")
    return f"<div style='display:flex;flex-wrap:wrap;gap:2px'>{''.join(cells)}</div>"


def _latest_html(summary: DatasetSummary, name: str | None) -> str:
    latest = summary.get("latest")
    if latest is None:
        return ""
    if summary["ref"].endswith(f"@{latest}"):
        return " &middot; latest"
    return f" &middot; latest is {_esc(f'{name}@{latest}')}"


def dataset_card(ds: CachedDataset, summary: DatasetSummary) -> str:
    """The dataset's HTML card."""
    description = ds.metadata.get("description") or ""
    license_text = ds.metadata.get("license") or ""
    label_column, label_rows = _label_rows(ds)
    parts = [
        f"<div class='se-card' data-testid='se-card' style='{CARD_STYLE};max-width:900px'>",
        f"<div><b>{_esc(summary['ref'])}</b> &middot; {_esc(summary['extent'])}{_latest_html(summary, ds.name)}</div>",
    ]
    if description:
        parts.append(f"<div style='color:{FG_MUTED};margin:4px 0'>{_esc(description[:500])}</div>")
    if license_text:
        parts.append(f"<div style='color:{FG_MUTED}'>License: {_esc(license_text)}</div>")
    parts.append(_strip(ds))
    parts.append("<div style='display:flex;gap:24px;align-items:flex-start'>")
    parts.append(
        f"<table><thead><tr><th>column</th><th>type</th></tr></thead><tbody>{_schema_rows(ds)}</tbody></table>"
    )
    if label_rows:
        parts.append(
            f"<table><thead><tr><th>{_esc(label_column)}</th><th>rows</th><th></th></tr></thead>"
            f"<tbody>{label_rows}</tbody></table>"
        )
    parts.append("</div></div>")
    return "".join(parts)


def _thumb_img(data: bytes | None) -> str:
    if data is None:
        return f"<div style='color:{FG_MUTED}'>(none)</div>"
    try:
        thumb, mime = encode_thumbnail(open_thumbnail(data, THUMB_PX))
    except Exception:  # noqa: BLE001 - an unreadable image must not break the card
        return f"<div style='color:{ERROR}'>unreadable</div>"
    return f"<img src='{data_uri(thumb, mime)}' style='max-width:{THUMB_PX}px;max-height:{THUMB_PX}px' alt=''>"


def _changed_strip(diff: Diff) -> str:
    """Before | after thumbnails of the first changed rows, with their changed fields."""
    if diff.datasets is None or not diff.rows.changed:
        return ""
    left, right = diff.datasets
    keys = diff.rows.changed[:CHANGED_ROWS_SHOWN]
    column = left.features.first_of(Image)
    if column != right.features.first_of(Image):
        column = None
    before = after = [None] * len(keys)
    if column is not None:
        rows_a = [a for a, _ in diff.rows.changed_rows[: len(keys)]]
        rows_b = [b for _, b in diff.rows.changed_rows[: len(keys)]]
        before = left.select(rows_a).to_arrow([column]).column(0).to_pylist()
        after = right.select(rows_b).to_arrow([column]).column(0).to_pylist()
    cells = []
    boxes = diff.boxes  # a Boxes cell reads as its box changes (added, removed, moved, relabelled)
    for key, old, new in zip(keys, before, after, strict=True):
        fields = diff.rows.changed_fields.get(key, {})
        text = "; ".join(
            f"{_esc(f)}: {_esc(boxes[f][key].describe())}"
            if key in boxes.get(f, {})
            else f"{_esc(f)}: {_esc(_plain(o))} → {_esc(_plain(n))}"
            for f, (o, n) in fields.items()
        )
        images = f"{_thumb_img(old)}<span style='padding:0 4px'>→</span>{_thumb_img(new)}" if column else ""
        cells.append(
            f"<figure style='margin:4px;font-size:11px;border:1px solid {BORDER};border-radius:4px;padding:4px'>"
            f"<div style='display:flex;align-items:center'>{images}</div>"
            f"<figcaption><b>{_esc(key)}</b><br>{text}</figcaption></figure>"
        )
    more = len(diff.rows.changed) - len(keys)
    tail = f"<div>... {more} more changed rows</div>" if more > 0 else ""
    return f"<div style='display:flex;flex-wrap:wrap'>{''.join(cells)}</div>{tail}"


BEFORE = "var(--jp-ui-font-color3, #9aa0a6)"
_BAR_PX = 160
_HIST_BINS = 16
_HIST_COLUMNS = 3


def label_bars(column: str, names: list[str], before: dict[str, int], after: dict[str, int]) -> str:
    """Label counts before and after as pairs of bars (grey: before, blue: after), read at a glance."""
    peak = max([*before.values(), *after.values(), 1])
    rows = []
    for name in names:
        old, new = before.get(name, 0), after.get(name, 0)
        delta = f"{new - old:+,}" if new != old else ""
        rows.append(
            f"<tr><td>{_esc(name)}</td><td>"
            f"<div data-testid='se-diff-before' style='background:{BEFORE};height:6px;"
            f"width:{round(_BAR_PX * old / peak)}px'></div>"
            f"<div data-testid='se-diff-after' style='background:{BAR};height:6px;margin-top:1px;"
            f"width:{round(_BAR_PX * new / peak)}px'></div></td>"
            f"<td style='text-align:right;color:{FG_MUTED};white-space:nowrap'>{_esc(delta)}</td></tr>"
        )
    legend = (
        f"<span style='color:{FG_MUTED};font-size:11px'><span style='background:{BEFORE}'>&nbsp;&nbsp;</span> before "
        f"<span style='background:{BAR}'>&nbsp;&nbsp;</span> after</span>"
    )
    return (
        f"<div data-testid='se-diff-bars'>{legend}<table style='border-collapse:collapse'>{''.join(rows)}</table></div>"
    )


def _numeric_histograms(diff: Diff) -> str:
    """For a few number columns both versions have: their histograms overlaid, over the same bins."""
    if diff.datasets is None:
        return ""
    left, right = diff.datasets
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from stable_explore.schema import Value

    columns = [
        name
        for name, feature in left.features.items()
        if isinstance(feature, Value)
        and feature.dtype.startswith(("int", "uint", "float", "double"))
        and name in right.features
        and right.features[name] == feature
    ][:_HIST_COLUMNS]
    charts = []
    for name in columns:
        sides = []
        for ds in (left, right):
            values = pc.cast(ds.arrow_column(name), pa.float64(), safe=False)
            array = np.asarray(values.drop_null().to_numpy(zero_copy_only=False), dtype=np.float64)
            sides.append(array[np.isfinite(array)])
        joined = np.concatenate(sides)
        if not len(joined):
            continue
        lo, hi = float(joined.min()), float(joined.max())
        edges = np.linspace(lo, hi, _HIST_BINS + 1) if hi > lo else np.array([lo, lo + 1.0])
        counts = [np.histogram(side, bins=edges)[0] for side in sides]
        peak = max(1, *(int(c.max()) for c in counts))
        bars = []
        for i in range(len(edges) - 1):
            old, new = int(counts[0][i]), int(counts[1][i])
            bars.append(
                "<div style='position:relative;width:9px;height:40px'>"
                f"<div data-testid='se-diff-before' style='position:absolute;bottom:0;width:9px;"
                f"height:{round(40 * old / peak)}px;background:{BEFORE}'></div>"
                f"<div data-testid='se-diff-after' style='position:absolute;bottom:0;left:2px;width:5px;"
                f"height:{round(40 * new / peak)}px;background:{BAR}'></div></div>"
            )
        axis = f"display:flex;align-items:flex-end;gap:1px;border-bottom:1px solid {BORDER}"
        charts.append(
            f"<div data-testid='se-diff-hist' style='font-size:11px;color:{FG_MUTED}'>"
            f"<div style='color:{FG}'>{_esc(name)} (grey: before, blue: after)</div>"
            f"<div style='{axis}'>{''.join(bars)}</div><div>{lo:.4g} to {hi:.4g}</div></div>"
        )
    if not charts:
        return ""
    return f"<div style='display:flex;gap:16px;flex-wrap:wrap;margin:6px 0'>{''.join(charts)}</div>"


def _plain(value: object) -> str:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)


def diff_card(diff: Diff) -> str:
    """The HTML of a Diff: summary, metadata, schema, label counts, relabels, changed rows side by side."""
    parts = [
        f"<div class='se-diff' data-testid='se-diff' style='{CARD_STYLE};max-width:1000px'>",
        f"<div><b>{_esc(diff.a)}</b> → <b>{_esc(diff.b)}</b></div>",
        f"<div style='margin:4px 0'>{_esc(diff.summary())}</div>",
    ]
    if diff.identical:
        parts.append("</div>")
        return "".join(parts)
    if diff.metadata:
        rows = "".join(
            f"<tr><td>{_esc(name)}</td><td>{_esc(old)}</td><td>{_esc(new)}</td></tr>"
            for name, (old, new) in sorted(diff.metadata.items())
        )
        parts.append(f"<table><tr><th>metadata</th><th>before</th><th>after</th></tr>{rows}</table>")
    if diff.schema:
        rows = "".join(f"<tr><td>{_esc(what)}</td><td>{_esc(items)}</td></tr>" for what, items in diff.schema.items())
        parts.append(f"<table><tr><th>schema</th><th>change</th></tr>{rows}</table>")
    for column, info in diff.labels.items():
        names = list(dict.fromkeys([*info["before"], *info["after"]]))
        rows = "".join(
            f"<tr><td>{_esc(n)}</td><td style='text-align:right'>{info['before'].get(n, 0):,}</td>"
            f"<td style='text-align:right'>{info['after'].get(n, 0):,}</td></tr>"
            for n in names
        )
        parts.append(
            "<div style='display:flex;gap:24px;align-items:flex-start;flex-wrap:wrap'>"
            f"<table><tr><th>{_esc(column)}</th><th>before</th><th>after</th></tr>{rows}</table>"
            f"{label_bars(column, names, info['before'], info['after'])}</div>"
        )
        if info["relabelled"]:
            moves = "".join(
                f"<tr><td>{_esc(old)}</td><td>{_esc(new)}</td><td style='text-align:right'>{count}</td></tr>"
                for (old, new), count in sorted(info["relabelled"].items(), key=lambda item: -item[1])
            )
            parts.append(f"<table><tr><th>from</th><th>to</th><th>rows</th></tr>{moves}</table>")
    if diff.rows.repeated_keys:
        for side, keys in diff.rows.repeated_keys.items():
            shown = ", ".join(_esc(k) for k in keys[:20])
            parts.append(f"<div style='color:{WARN}'>repeated keys in {_esc(side)}: {shown}</div>")
    if diff.shards:
        parts.append(f"<div style='color:{FG_MUTED};margin:4px 0'>{_esc(shard_line(diff.shards))}</div>")
    parts.append(_numeric_histograms(diff))
    parts.append(_changed_strip(diff))
    for change in ("removed", "added"):
        if getattr(diff.rows, change):
            parts.append(gallery_html(diff.gallery(change, 0, GALLERY_PAGE)))
    parts.append("</div>")
    return "".join(parts)


def gallery_html(gallery: Gallery) -> str:
    """One page of removed or added rows (or changed rows, as they are now) as thumbnails with their keys."""
    diff = gallery.diff
    change = gallery.change
    heading = {"removed": "removed rows", "added": "added rows", "changed": "changed rows"}[change]
    title = f"{heading}: {gallery.total:,}"
    if gallery.num_pages > 1:
        title += f" · page {gallery.page + 1} of {gallery.num_pages} (diff.gallery({change!r}, page=N) shows another)"
    cells = []
    if diff.datasets is not None and gallery.keys:
        left, right = diff.datasets
        side = left if change == "removed" else right
        positions = [a if change == "removed" else b for a, b in gallery.rows]
        images = [None] * len(positions)
        labels: list[str] = [""] * len(positions)
        column = side.features.first_of(Image)
        label_column = side.features.first_of(ClassLabel)
        wanted = [c for c in (column, label_column) if c is not None]
        if wanted:
            table = side.select(positions).to_arrow(wanted)
            if column is not None:
                images = table.column(column).to_pylist()
            if label_column is not None:
                feature = side.features[label_column]
                assert isinstance(feature, ClassLabel)
                labels = [
                    str(feature.int2str(v)) if v is not None and 0 <= v < (feature.num_classes or 0) else ""
                    for v in table.column(label_column).to_pylist()
                ]
        for key, image, label in zip(gallery.keys, images, labels, strict=True):
            picture = _thumb_img(image) if column is not None else ""
            caption = f"<b>{_esc(key)}</b>" + (f"<br>{_esc(label)}" if label else "")
            cells.append(
                f"<figure data-testid='se-diff-{change}' style='margin:2px;font-size:11px;text-align:center;"
                f"border:1px solid {BORDER};border-radius:4px;padding:3px;max-width:{THUMB_PX + 40}px;"
                f"overflow-wrap:anywhere'>{picture}<figcaption>{caption}</figcaption></figure>"
            )
    elif gallery.keys:
        cells = [f"<code data-testid='se-diff-{change}' style='margin:2px'>{_esc(k)}</code>" for k in gallery.keys]
    return (
        f"<div class='se-gallery' style='margin:6px 0'><div style='font-weight:600'>{_esc(title)}</div>"
        f"<div style='display:flex;flex-wrap:wrap;gap:2px'>{''.join(cells)}</div></div>"
    )


def shard_line(shards: ShardDiff) -> str:
    """The shard files of a diff in words, counted as a save reports them ("reused N of the parent's").

    Examples
    --------
    >>> shard_line({"identical": [], "only_a": [0], "only_b": [0, 1], "shared": [[0, 0]]})
    'shard files: 1 shared by both (the same bytes; 0 of them read whole by both), 0 only in a, 1 only in b'
    """
    shared = shards.get("shared", shards.get("identical", []))
    shared_a = {i for i, _ in shared}
    shared_b = {j for _, j in shared}
    only_a = len([i for i in shards.get("only_a", []) if i not in shared_a])
    only_b = len([j for j in shards.get("only_b", []) if j not in shared_b])
    whole = len(shards.get("identical", []))
    return (
        f"shard files: {len(shared)} shared by both (the same bytes; {whole} of them read whole by both), "
        f"{only_a} only in a, {only_b} only in b"
    )


def patches_strip(patches: Patches, length: int = 12) -> str:
    """The HTML of a patches view (``ds.patches(column)``): a line of counts and a strip of its first crops.

    Each crop is captioned with its class name (and score, for a prediction); only those crops'
    images are decoded.
    """
    table = patches.table
    images = len(set(table.column("row").to_pylist())) if len(patches) else 0
    head = (
        f"<div style='font-weight:600'>{_esc(patches.dataset.ref)} · patches of {_esc(patches.column)} · "
        f"{len(patches):,} boxes on {images:,} images</div>"
    )
    first = patches[: min(length, len(patches))]
    crops = first.crops(thumbnail_size=THUMB_PX)
    cells = []
    style = "margin:2px;text-align:center;font-size:11px"
    for crop, row in zip(crops, first.table.to_pylist(), strict=True):
        caption = _esc(row["category"])
        if row["score"] is not None:
            caption += f" {float(row['score']):.2f}"
        if crop is None:
            img = f"<div style='color:{FG_MUTED}'>(none)</div>"
        else:
            thumb, mime = encode_thumbnail(crop if crop.mode in ("RGB", "RGBA", "L") else crop.convert("RGB"))
            img = f"<img src='{data_uri(thumb, mime)}' style='max-width:{THUMB_PX}px;max-height:{THUMB_PX}px' alt=''>"
        cells.append(f"<figure style='{style}'>{img}<figcaption>{caption}</figcaption></figure>")
    strip = f"<div style='display:flex;flex-wrap:wrap;gap:2px'>{''.join(cells)}</div>"
    return f"<div class='se-patches' style='{CARD_STYLE}'>{head}{strip}</div>"
