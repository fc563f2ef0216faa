"""The JSON the shard browser sends its page, one TypedDict per message kind (``static/browser.js`` reads them).

A page message (``type: "page"``) carries a :class:`Cell` per row shown; a detail message
(``type: "detail"``) one row's fields and image; ``detail_marks`` the detail pane's pending edits and
place in the filter alone; ``gone`` says the version was deleted since it was opened. Thumbnails, masks
and detail images travel as binary buffers beside the JSON: a field ``buffer`` is an index into them.

Examples
--------
>>> marks: DetailMarks = {"row": 3, "position": 0, "shown": 10, "pending_label": None, "dropped": False}
>>> message: DetailMarksMessage = {"type": "detail_marks", **marks}
>>> sorted(message)
['dropped', 'pending_label', 'position', 'row', 'shown', 'type']
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from typing_extensions import NotRequired, TypedDict

__all__ = [
    "BoxRow",
    "BrokenVideo",
    "Cell",
    "DetailMarks",
    "DetailMarksMessage",
    "DetailMessage",
    "GoneMessage",
    "ImageInfo",
    "LabelField",
    "MaskBuffer",
    "MaskImage",
    "Overlays",
    "PageMessage",
    "PlayerVideo",
    "SentOverlays",
    "TileVideo",
    "VideoMarks",
]

BoxRow: TypeAlias = list[float | None]  # [x0, y0, x1, y1, class, score]: corners as fractions, score None if none


class LabelField(TypedDict):
    """A column drawn over the images (the ``label_fields`` trait): boxes, a mask or keypoints."""

    name: str
    kind: Literal["boxes", "mask", "keypoints"]
    names: list[str]
    role: NotRequired[Literal["predictions", "truth"]]  # boxes: dashed with scores, or drawn solid
    background: NotRequired[bool]  # a mask: whether its class 0 is left undrawn
    skeleton: NotRequired[list[list[int]]]  # keypoints: the pairs of points joined by a line


class MaskImage(TypedDict):
    """A mask made small for drawing: an 8-bit PNG of class indexes, its size and the classes it shows."""

    png: bytes
    size: list[int]
    classes: list[int]


class MaskBuffer(TypedDict):
    """A :class:`MaskImage` as sent: its PNG moved into the message's buffers, at index ``buffer``."""

    buffer: int
    size: list[int]
    classes: list[int]


class _OverlaysBase(TypedDict):
    size: list[int] | None  # the stored image's [width, height] (None: unknown)
    boxes: dict[str, list[BoxRow] | None]  # per Boxes column
    outcomes: NotRequired[dict[str, list[str]]]  # an evaluation's: per box, "tp", "fp", "fn"...
    keypoints: NotRequired[dict[str, list[list[float]] | None]]  # per Keypoints column: [x, y, v, ...] per instance


class Overlays(_OverlaysBase):
    """What is drawn over one row's image, as made (masks with their PNGs)."""

    masks: NotRequired[dict[str, MaskImage | None]]


class SentOverlays(_OverlaysBase):
    """:class:`Overlays` as sent: each mask's PNG is a buffer of the message."""

    masks: NotRequired[dict[str, MaskBuffer | None]]


class TileVideo(TypedDict):
    """What a video row's tile shows in its badge."""

    duration: float
    frames: int
    fps: float


class VideoMarks(TypedDict, total=False):
    """A video row's tile: its badge, or why the video cannot be read."""

    video: TileVideo
    broken: str


class Cell(TypedDict):
    """One tile of a page: its row, key, label and shard, and what it shows."""

    row: int
    key: str
    label: int
    shard: int
    buffer: NotRequired[int]  # its thumbnail's buffer
    mime: NotRequired[str]
    overlays: NotRequired[SentOverlays]
    fields: NotRequired[dict[str, str]]  # no image column: the row's fields as text
    video: NotRequired[TileVideo]
    broken: NotRequired[str]
    note: NotRequired[str]  # the patches browser: a crop's score


class PageMessage(TypedDict):
    """A page of tiles (``type: "page"``)."""

    type: Literal["page"]
    page: int
    num_pages: int
    num_rows: int
    cells: list[Cell]
    empty: NotRequired[str]  # no row shown: which filters keep nothing


class GoneMessage(TypedDict):
    """The version shown was deleted since it was opened (``type: "gone"``)."""

    type: Literal["gone"]
    message: str


class DetailMarks(TypedDict):
    """What the detail pane says of a row beside its stored fields."""

    row: int
    position: int  # its place among the rows shown, -1 when the filter hides it
    shown: int
    pending_label: int | None
    dropped: bool


class DetailMarksMessage(DetailMarks):
    """The detail pane's marks alone, when edits or filters change (``type: "detail_marks"``)."""

    type: Literal["detail_marks"]


class ImageInfo(TypedDict):
    """A stored image's size (from its header; absent when unreadable), format and bytes."""

    width: NotRequired[int]
    height: NotRequired[int]
    format: str
    bytes: int


class PlayerVideo(TypedDict):
    """What the detail pane's player and frame strip need of a video."""

    mime: str
    codec: str
    duration: float
    frames: int
    fps: float
    width: int
    height: int


class BrokenVideo(TypedDict):
    """A video the detail pane cannot play, and why."""

    broken: str


class DetailMessage(DetailMarks):
    """One row's detail (``type: "detail"``): its fields as ``[name, text]`` pairs, key, shard and image."""

    type: Literal["detail"]
    key: str
    shard: int
    shard_row: int
    base_row: int
    label: int
    fields: list[list[str]]
    video: NotRequired[PlayerVideo | BrokenVideo]
    full: NotRequired[bool]  # the image as stored ("1:1"), not bounded
    image: NotRequired[ImageInfo]
    mime: NotRequired[str]  # the image's, in buffer 0
    overlays: NotRequired[SentOverlays]
