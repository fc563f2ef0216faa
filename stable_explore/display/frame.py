"""A DataFrame shown with its images inline: ``show(ds.to_pandas(images="thumbnail"))``.

pandas prints a PIL image in a cell as ``<PIL.Image.Image ...>``; :func:`show` wraps the frame
in an object whose HTML has each image as a small inline ``<img>`` (PIL images and encoded bytes
alike) and every other cell escaped. The frame itself is untouched (``.data``).

Examples
--------
>>> import pandas as pd
>>> from PIL import Image
>>> view = show(pd.DataFrame({"image": [Image.new("RGB", (4, 4))], "label": ["<cat>"]}))
>>> html = view._repr_html_()
>>> html.count("<img "), "&lt;cat&gt;" in html
(1, True)
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from stable_explore.display.images import data_uri, encode_thumbnail, open_thumbnail, pil_thumbnail
from stable_explore.errors import ImageTooLargeError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FrameView", "show"]

MAX_ROWS = 100
_TEXT_LIMIT = 120


def _image_cell(value: object, size: int) -> str | None:
    """An ``<img>`` for a PIL image or encoded image bytes; None when the value is neither."""
    try:
        from PIL import Image as PILImage

        if isinstance(value, PILImage.Image):
            image = pil_thumbnail(value, size)  # never decodes a lazily opened image at full size
        elif isinstance(value, (bytes, bytearray, memoryview)) and len(value) > 8:
            image = open_thumbnail(bytes(value), size)
        else:
            return None
        data, mime = encode_thumbnail(image)
    except ImageTooLargeError:
        width, height = getattr(value, "size", (0, 0))
        what = f"{width}x{height} image" if width else "image"
        return f"<i>{html.escape(what)}: too large to draw a thumbnail within its memory budget</i>"
    except Exception:  # noqa: BLE001 - bytes that are not an image show as text
        return None
    style = f"max-width:{size}px;max-height:{size}px;image-rendering:auto"
    return f"<img src='{data_uri(data, mime)}' style='{style}' alt=''>"


def _text_cell(value: object) -> str:
    text = f"<{len(value):,} bytes>" if isinstance(value, (bytes, bytearray, memoryview)) else str(value)
    if len(text) > _TEXT_LIMIT:
        text = text[: _TEXT_LIMIT - 1] + "…"
    return html.escape(text)


class FrameView:
    """A DataFrame with an HTML view that draws images inline (see :func:`show`).

    Attributes
    ----------
    data:
        The DataFrame, unchanged.
    """

    def __init__(self, frame: pd.DataFrame, *, max_rows: int = MAX_ROWS, size: int = 64) -> None:
        self.data = frame
        self.max_rows = max_rows
        self.size = size

    def __repr__(self) -> str:
        return repr(self.data)

    def _repr_html_(self) -> str:
        frame = self.data
        shown = frame.head(self.max_rows)
        index_name = html.escape(str(frame.index.name or ""))
        head = f"<th>{index_name}</th>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
        rows = []
        for index, row in zip(shown.index, shown.itertuples(index=False, name=None), strict=True):
            cells = []
            for value in row:
                image = _image_cell(value, self.size)
                cells.append(f"<td>{image if image is not None else _text_cell(value)}</td>")
            rows.append(f"<tr><th>{html.escape(str(index))}</th>{''.join(cells)}</tr>")
        more = len(frame) - len(shown)
        tail = f"<p>… {more:,} more rows (show(df, max_rows=…) shows more)</p>" if more > 0 else ""
        shape = f"<p>{len(frame):,} rows x {len(frame.columns)} columns</p>"
        return (
            "<div class='se-frame' data-testid='se-frame'><table class='dataframe'>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{tail}{shape}</div>"
        )


def show(frame: pd.DataFrame, *, max_rows: int = MAX_ROWS, size: int = 64) -> FrameView:
    """Show a DataFrame with its images inline (PIL images or encoded bytes), other cells escaped.

    Parameters
    ----------
    frame:
        Typically ``ds.to_pandas(images="thumbnail")`` (or ``"pil"`` or ``"bytes"``).
    max_rows:
        Rows drawn (the rest are counted).
    size:
        Largest side of each drawn image, in pixels.

    Returns
    -------
    FrameView
        Displays as HTML in a notebook; ``.data`` is the frame.

    Examples
    --------
    >>> import tempfile, numpy as np, stable_explore as se
    >>> from stable_explore.display import show
    >>> ds = se.build([{"image": np.zeros((8, 8), np.uint8), "label": "a"}],
    ...               se.Features(image=se.Image(), label=se.ClassLabel(names=["a"])),
    ...               name="tiny", home=tempfile.mkdtemp(), progress=False)
    >>> show(ds.to_pandas(images="thumbnail"))._repr_html_().count("<img ")
    1
    """
    return FrameView(frame, max_rows=max_rows, size=size)
