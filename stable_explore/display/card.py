"""The static HTML card of a dataset: header, schema, label counts, a strip of thumbnails.

It is what a notebook shows without a live kernel (GitHub, nbviewer), so it
is self-contained (inline thumbnails, inline styles) and escapes every piece
of user text. It decodes only the few images of the strip.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from stable_explore.display.images import data_uri, encode_thumbnail, open_thumbnail
from stable_explore.schema import ClassLabel, Image

if TYPE_CHECKING:
    from stable_explore.dataset import CachedDataset

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


def _esc(value: Any) -> str:
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


def _strip(ds: CachedDataset) -> str:
    image_column = ds.features.first_of(Image)
    if image_column is None or len(ds) == 0:
        return ""
    head = ds[: min(STRIP_LENGTH, len(ds))]
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
        try:
            thumb, mime = encode_thumbnail(open_thumbnail(data, THUMB_PX))
            img = f"<img src='{data_uri(thumb, mime)}' style='max-width:{THUMB_PX}px;max-height:{THUMB_PX}px' alt=''>"
        except Exception:  # noqa: BLE001 - an unreadable image must not break the card
            img = f"<div style='color:{ERROR}'>unreadable</div>"
        style = "margin:2px;text-align:center;font-size:11px"
        cells.append(f"<figure style='{style}'>{img}<figcaption>{caption}</figcaption></figure>")
    return f"<div style='display:flex;flex-wrap:wrap;gap:2px'>{''.join(cells)}</div>"


def _latest_html(summary: dict[str, Any], name: str | None) -> str:
    latest = summary.get("latest")
    if latest is None:
        return ""
    if summary["ref"].endswith(f"@{latest}"):
        return " &middot; latest"
    return f" &middot; latest is {_esc(f'{name}@{latest}')}"


def dataset_card(ds: CachedDataset, summary: dict[str, Any]) -> str:
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


def _changed_strip(diff: Any) -> str:
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
        before = left.take(rows_a).to_arrow([column]).column(0).to_pylist()
        after = right.take(rows_b).to_arrow([column]).column(0).to_pylist()
    cells = []
    for key, old, new in zip(keys, before, after, strict=True):
        fields = diff.rows.changed_fields.get(key, {})
        text = "; ".join(f"{_esc(f)}: {_esc(_plain(o))} → {_esc(_plain(n))}" for f, (o, n) in fields.items())
        images = f"{_thumb_img(old)}<span style='padding:0 4px'>→</span>{_thumb_img(new)}" if column else ""
        cells.append(
            f"<figure style='margin:4px;font-size:11px;border:1px solid {BORDER};border-radius:4px;padding:4px'>"
            f"<div style='display:flex;align-items:center'>{images}</div>"
            f"<figcaption><b>{_esc(key)}</b><br>{text}</figcaption></figure>"
        )
    more = len(diff.rows.changed) - len(keys)
    tail = f"<div>... {more} more changed rows</div>" if more > 0 else ""
    return f"<div style='display:flex;flex-wrap:wrap'>{''.join(cells)}</div>{tail}"


def _plain(value: Any) -> str:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)


def diff_card(diff: Any) -> str:
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
        parts.append(f"<table><tr><th>{_esc(column)}</th><th>before</th><th>after</th></tr>{rows}</table>")
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
    parts.append(_changed_strip(diff))
    for change in ("removed", "added"):
        if getattr(diff.rows, change):
            parts.append(gallery_html(diff.gallery(change, 0, GALLERY_PAGE)))
    parts.append("</div>")
    return "".join(parts)


def gallery_html(gallery: Any) -> str:
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
            table = side.take(positions).to_arrow(wanted)
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


def shard_line(shards: dict[str, Any]) -> str:
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
