"""The methods of ``CachedDataset`` that split its rows for many readers: shard, split_by_node, to_iterable.

A mixin, so dataset.py stays about views, decoding and export; the splitting itself is in
_sharding.py (which rows go where) and _iterable.py (the streaming PyTorch view).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stable_explore.dataset._members import DatasetMembers

if TYPE_CHECKING:
    from typing_extensions import Self

    from stable_explore.dataset._clips import ClipView
    from stable_explore.dataset._iterable import RowStream

__all__ = ["SplitViews"]


class SplitViews(DatasetMembers):
    """``ds.shard``, ``ds.split_by_node``, ``ds.to_iterable`` and ``ds.clips``: parts of a dataset for many readers."""

    def shard(self, num_shards: int, index: int, *, by: str = "rows", contiguous: bool = True) -> Self:
        """A view of part ``index`` of ``num_shards`` disjoint parts that together hold every row once.

        Parameters
        ----------
        num_shards:
            How many parts (``>= 1``; more parts than rows or files gives some empty parts).
        index:
            Which part, ``0 <= index < num_shards``.
        by:
            ``"rows"`` (default): part sizes differ by at most one row. ``"files"``: whole shard
            files (all rows of this dataset stored in one file go to one part), so each reader
            maps only its own files; sizes then follow the files' row counts.
        contiguous:
            True (default): consecutive rows (or files) per part, in order, so the parts
            concatenated in index order are this dataset. False: every ``num_shards``-th row
            (or file) starting at ``index``, like Hugging Face's ``shard(contiguous=False)``.

        Returns
        -------
        CachedDataset
            A view (no data copied); on a view, the parts are of its rows, in its order.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(10)], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), shard_size=1, batch_size=5, progress=False)
        >>> [ds.shard(3, i)["x"] for i in range(3)]
        [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
        >>> ds.shard(3, 1, contiguous=False)["x"]
        [1, 4, 7]
        >>> ds.shard_row_counts, ds.shard(2, 1, by="files")["x"]
        ([5, 5], [5, 6, 7, 8, 9])
        """
        from stable_explore.dataset._sharding import shard_rows

        rows = shard_rows(
            self._all_rows(),
            num_shards,
            index,
            by=by,
            contiguous=contiguous,
            segments=self.backend.segments,
            offsets=self.backend.segment_offsets,
        )
        return self._view(rows)

    def split_by_node(self, rank: int, world_size: int, *, by: str = "rows") -> Self:
        """The part of the rows node ``rank`` of ``world_size`` reads: ``shard(world_size, rank, by=by)``.

        Like ``datasets.distributed.split_dataset_by_node``: contiguous parts whose sizes differ by
        at most one row (``by="rows"``), or whole shard files (``by="files"``). Pass the rank and
        world size your launcher gives (``torch.distributed.get_rank()``, or ``RANK`` and
        ``WORLD_SIZE`` under torchrun); nothing is read from the environment.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> ds = se.build([{"x": i} for i in range(5)], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> ds.split_by_node(0, 2)["x"], ds.split_by_node(1, 2)["x"]
        ([0, 1, 2], [3, 4])
        """
        from stable_explore.dataset._sharding import check_part

        world_size, rank = check_part(world_size, rank, count_name="world_size", index_name="rank")
        return self.shard(world_size, rank, by=by)

    def to_iterable(
        self,
        *,
        shuffle: bool = False,
        seed: int = 0,
        epoch: int = 0,
        buffer_size: int = 1000,
        rank: int | None = None,
        world_size: int | None = None,
    ) -> RowStream:
        """A streaming ``torch.utils.data.IterableDataset`` of these rows, split over ranks and workers.

        Each rank reads its own part, and each DataLoader worker of a rank its own part of that,
        so one epoch yields every row exactly once over all ranks and workers. Rows are decoded as
        ``ds[i]`` decodes them (see :meth:`with_format`); memory holds a block of rows and the
        shuffle buffer, never the dataset.

        Parameters
        ----------
        shuffle:
            Shuffle per ``(seed, epoch)``: the order of shard files, the order of blocks of 256
            rows within a file, and rows within windows of ``buffer_size`` rows (whole blocks).
            Same seed and epoch, same order; call ``view.set_epoch(e)`` before each epoch for a
            new one (it also reaches ``persistent_workers``).
        seed, epoch:
            Non-negative ints.
        buffer_size:
            Rows shuffled together, rounded up to whole blocks of 256 (larger: more random, more
            memory).
        rank, world_size:
            This process's part. Default: ``torch.distributed``'s when a process group is
            initialised, else ``0`` and ``1`` (one process reads everything). Give both or neither.

        Returns
        -------
        IterableView
            A ``torch.utils.data.IterableDataset`` with ``set_epoch``, ``epoch``, ``len()`` (rows
            this rank yields in this epoch), and ``state_dict()`` / ``load_state_dict(state)``: a
            new view over the same rows given the state continues where the old one stopped (the
            same rows in the same order, none read again), also per worker through torchdata's
            ``StatefulDataLoader``.

        Notes
        -----
        Needs torch. How rows are split: shard files (the rows of this dataset stored in one
        file) are dealt whole to ranks, round-robin, as far as every rank gets the same number
        of files; the files left over are cut into equal row ranges, one per rank. Each rank's
        share is split the same way over its workers. So with fewer files than ranks x workers
        (one big file, eight workers) every worker still reads rows. Every rank gets the same
        number of whole files, so ranks' row counts differ only as much as the files' row counts
        do (plus one row); a build cuts files by bytes, so with rows of varying size, ranks (and,
        when shuffling, epochs) can differ by some rows: use ``drop_last`` or DDP's ``join`` as
        with any uneven split.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> from torch.utils.data import DataLoader
        >>> ds = se.build([{"x": i} for i in range(8)], se.Features(x=se.Value("int64")), name="n",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> view = ds.to_iterable(rank=1, world_size=2)
        >>> len(view), [int(x) for batch in DataLoader(view, batch_size=2) for x in batch["x"]]
        (4, [4, 5, 6, 7])
        >>> view = ds.to_iterable(shuffle=True, seed=1, buffer_size=4)
        >>> sorted(row["x"] for row in view) == list(range(8))
        True
        >>> rows = iter(view)
        >>> first = [next(rows)["x"] for _ in range(3)]
        >>> state = view.state_dict()  # JSON-able: save it with the checkpoint
        >>> resumed = ds.to_iterable(shuffle=True, seed=1, buffer_size=4)
        >>> resumed.load_state_dict(state)
        >>> sorted(first + [row["x"] for row in resumed]) == list(range(8))
        True
        """
        from stable_explore.dataset._iterable import IterableView, resolve_rank
        from stable_explore.dataset._sharding import file_units

        rank, world_size = resolve_rank(rank, world_size)
        units = file_units(self._all_rows(), self.backend.segments, self.backend.segment_offsets)
        view: RowStream = IterableView(
            units,
            self._rows_at,
            ref=self.ref,
            version=self.version,
            shuffle=shuffle,
            seed=seed,
            epoch=epoch,
            buffer_size=buffer_size,
            rank=rank,
            world_size=world_size,
        )
        return view

    def clips(
        self,
        window_length: int,
        frame_skip: int = 0,
        hop_size: int = 1,
        min_video_frames: int | None = None,
        column: str | None = None,
        *,
        video: str | None = None,
        frame: str | None = None,
    ) -> ClipView:
        """Frame windows of this dataset's videos, one window per row, cut exactly as stable-datasets cuts them.

        A window takes ``window_length`` frames, every ``frame_skip + 1``-th, so it spans
        ``(window_length - 1) * (frame_skip + 1) + 1`` frames; windows start at frame 0 and every
        ``hop_size`` frames after, so a video of ``T`` frames gives ``(T - span) // hop_size + 1``
        windows, and none when ``T`` is below the span or ``min_video_frames``.

        Parameters
        ----------
        window_length, frame_skip, hop_size, min_video_frames:
            The window rule above (stable-datasets' parameters, same meaning).
        column:
            The ``Video`` column (needed only when there are several), or for frame-level data
            the ``Image`` column holding one frame per row.
        video, frame:
            Frame-level data: the column naming each frame's video and the one giving its index
            in the video (found by name when not given: ``video_id``/``video``, ``frame_idx``/``frame``).

        Returns
        -------
        ClipView
            Row ``i`` is a dict: ``frames`` (``uint8`` T x H x W x 3), ``frame_indices``,
            ``start_frame``, ``video_row`` and the video row's other columns (frame-level data:
            the video's key and the plain columns constant within each video). It has ``len``,
            indexing and slicing, ``shuffle(seed)``, ``shard``, ``split_by_node``,
            ``to_iterable`` and ``__getitems__``, and feeds a DataLoader with workers.

        Notes
        -----
        Needs PyAV for a ``Video`` column (``pip install 'stable-explore[video]'``). Each video
        is probed once for its frame count (kept in the home, see docs/video.md); a window
        decodes from the key frame before its first frame to its last, never the whole video. A video that cannot be
        decoded raises ``VideoDecodeError`` naming the row, its key and the column.

        Examples
        --------
        >>> import tempfile, stable_explore as se
        >>> from stable_explore.testing.videos import frame_index, indexed_video
        >>> ds = se.build([{"video": indexed_video(12), "label": "walk"}],
        ...               se.Features(video=se.Video(), label=se.Value("string")), name="walks",
        ...               home=tempfile.mkdtemp(), progress=False)
        >>> clips = ds.clips(window_length=4, frame_skip=1, hop_size=2)
        >>> len(clips), clips[1]["frames"].shape, clips[1]["frame_indices"].tolist(), clips[1]["label"]
        (3, (4, 48, 64, 3), [2, 4, 6, 8], 'walk')
        >>> [frame_index(f) for f in clips[2]["frames"]]
        [4, 6, 8, 10]
        """
        from stable_explore.dataset._clips import clip_view

        columns = self._column_map()
        return clip_view(
            self,  # type: ignore[arg-type]  # a CachedDataset: this is one of its mixins
            window_length=window_length,
            frame_skip=frame_skip,
            hop_size=hop_size,
            min_video_frames=min_video_frames,
            column=column,
            video=video,
            frame=frame,
            stored_name=lambda name: columns.stored(name) if name in columns.features else name,
        )
