"""What ``ShardBrowser`` gives the mixins it is made of, declared once for all of them.

The shard browser is assembled from mixins by job (filters, selection, similar rows, box edits and
histograms, videos, pages and details, snapshots). Their methods read the browser's synced traits,
its one :class:`~stable_explore.widgets._state.BrowserState` and call each other's methods. Each
mixin derives from :class:`BrowserMembers`, which declares those members for the type checker only;
``ShardBrowser`` (and the mixins themselves) define them, and mypy checks that each definition
matches its declaration here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import numpy as np

    from stable_explore.dataset import CachedDataset
    from stable_explore.schema.video_codec import VideoInfo
    from stable_explore.versioning.edits import Draft
    from stable_explore.widgets._messages import BrokenVideo, GoneMessage, PlayerVideo, VideoMarks
    from stable_explore.widgets._state import BrowserState, Opened
    from stable_explore.widgets._thumbs import ThumbnailCache

__all__ = ["BrowserMembers"]


class BrowserMembers:
    """The base of ``ShardBrowser``'s mixins: the browser's members they use, for the type checker.

    At run time the class is empty; ``ShardBrowser`` and its mixins provide every member below.
    """

    if TYPE_CHECKING:
        _state: BrowserState  # the kernel-side state that is not synced
        model_id: str

        # synced traits (see ShardBrowser's class body)
        class_names: list[str]
        label_column: str
        label_fields: list[dict[str, Any]]  # LabelField each (a traitlets List of Dict: typed as the trait is)
        shard: int
        label_filter: list[int]
        search: str
        page_size: int
        page: int
        thumb_size: int
        num_rows: int
        num_pages: int
        selected: list[int]
        flagged: list[int]
        status: str
        dropped: list[int]
        pending_labels: dict[str, int]
        pending: str
        fields: list[dict[str, Any]]
        field_filters: list[dict[str, Any]]
        sort_by: str
        sort_desc: bool
        histograms: dict[str, object]
        box_histograms: dict[str, dict[str, Any]]  # {Boxes column: {"area": {"edges", "counts"}, ..., "classes"}}
        subset: str
        similar_by: str
        similar_reason: str
        similar_progress: dict[str, object]
        can_go_back: bool

        @property
        def dataset(self) -> CachedDataset: ...

        def send(self, content: Mapping[str, object], buffers: Sequence[bytes] | None = None) -> None: ...
        def send_page(self) -> None: ...
        def page_rows(self, page: int | None = None) -> np.ndarray: ...
        def show_rows(self, rows: Sequence[int] | np.ndarray | None, title: str = "") -> None: ...
        def _described(self) -> dict[str, Any]: ...
        def _refilter(self, *, send: bool = True) -> None: ...
        def _refresh_detail(self, key: object) -> None: ...
        def _push_detail_marks(self) -> None: ...
        def _update_snapshot(self) -> None: ...
        def _set_draft(self, draft: Draft | None) -> None: ...
        def _image_sizes(self, rows: np.ndarray) -> list[tuple[int, int] | None]: ...
        def _gone(self) -> GoneMessage | None: ...
        def pending_boxes(self, rows: np.ndarray, column: str) -> dict[int, list[dict[str, Any]]]: ...
        def video_marks(self, rows: np.ndarray) -> list[VideoMarks]: ...
        def video_detail(self, row: int) -> PlayerVideo | BrokenVideo | None: ...
        def _video_row(self, row: int) -> tuple[object, VideoInfo | str]: ...
        def _video_thumbnails(
            self, opened: Opened, cache: ThumbnailCache, rows: np.ndarray, base: np.ndarray, size: int
        ) -> list[tuple[bytes, str] | None]: ...
        def _repr_mimebundle_(self, **kwargs: Any) -> Any: ...
        def _card_html(self) -> str: ...
