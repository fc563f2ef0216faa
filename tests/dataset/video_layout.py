"""stable-datasets' ``lance-video-frames`` layout as its documentation states it, written and read in plain code.

stable-datasets is not installable here, so its writer's output and its backend's reading rule are
restated from the layout's documented fields (one Lance row per WebP frame: ``video_id`` int32,
``frame_idx`` int32, ``bytes`` large_binary; ``_metadata.json`` with ``format``, ``layout`` and a
``videos`` list of ``path``, ``T``, ``H``, ``W``, ``start_row`` and ``metadata``). The tests hold our
reader and writer to these.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from PIL import Image as PILImage

FRAME_COLUMNS = [("video_id", pa.int32()), ("frame_idx", pa.int32()), ("bytes", pa.large_binary())]


def webp(frame: np.ndarray, quality: int = 90) -> bytes:
    buffer = io.BytesIO()
    PILImage.fromarray(frame).save(buffer, format="WEBP", quality=quality)
    return buffer.getvalue()


def decode(blob: bytes) -> np.ndarray:
    with PILImage.open(io.BytesIO(blob)) as image:
        return np.asarray(image.convert("RGB"))


def write_layout(folder: Path, videos: list[dict[str, Any]], *, quality: int = 90) -> Path:
    """Write the layout as its writer does: ``videos`` items have ``frames`` (n x H x W x 3) and ``metadata``.

    Rows go video after video, frame 0 first; each record's ``start_row`` is its first row, ``id`` its
    place (or the item's ``id``), as its writer numbers them. An item may override any record field
    (``T``, ``start_row``...) to make a damaged cache.
    """
    import lance

    schema = pa.schema(FRAME_COLUMNS)
    batches, records, row = [], [], 0
    for position, video in enumerate(videos):
        frames = video["frames"]
        count = len(frames)
        video_id = video.get("id", position)  # its writer skips a video it cannot decode: ids then have gaps
        records.append(
            {
                "id": video_id,
                "key": video.get("key", position),
                "path": video.get("path", f"/videos/{position}.mp4"),
                "checksum": None,
                "T": count,
                "H": int(frames[0].shape[0]),
                "W": int(frames[0].shape[1]),
                "start_row": row,
                "metadata": video.get("metadata", {}),
                **video.get("record", {}),
            }
        )
        blobs = pa.array([webp(frame, quality) for frame in frames], pa.large_binary())
        ids = pa.array([video_id] * count, pa.int32())
        batches.append(pa.record_batch([ids, pa.array(range(count), pa.int32()), blobs], schema=schema))
        row += count
    lance.write_dataset(pa.Table.from_batches(batches, schema=schema), str(folder))
    meta = {
        "cache_format_version": 1,
        "format": "lance",
        "layout": "lance-video-frames",
        "schema_fingerprint": "",
        "num_rows": row,
        "total_rows": row,
        "n_videos": len(records),
        "n_skipped": 0,
        "encoding": "webp",
        "quality": quality,
        "resize": None,
        "video_column": "video",
        "videos": records,
    }
    (folder / "_metadata.json").write_text(json.dumps(meta, indent=2))
    return folder


def their_windows(
    folder: Path, *, window_length: int, frame_skip: int = 0, hop_size: int = 1, min_video_frames: int | None = None
) -> list[dict[str, Any]]:
    """Every sample stable-datasets' backend gives for the cache at ``folder``, in order (its reading rule).

    Windows start at frame 0 and every ``hop_size`` frames while the last frame stays in the video; a
    video shorter than the span (or ``min_video_frames``) gives none. Frame ``f`` of the video at place
    ``v`` is Lance row ``videos[v]["start_row"] + f``. A sample is its frames (decoded RGB) with
    ``video_idx``, ``filename``, ``start_frame``, ``frame_indices``, ``sample_idx`` and the video's metadata.
    """
    import lance

    meta = json.loads((folder / "_metadata.json").read_text())
    dataset = lance.dataset(str(folder))
    stride = frame_skip + 1
    span = (window_length - 1) * stride + 1
    least = span if min_video_frames is None else max(span, min_video_frames)
    samples: list[dict[str, Any]] = []
    for place, video in enumerate(meta["videos"]):
        if video["T"] < least:
            continue
        for start in range(0, video["T"] - span + 1, hop_size):
            indices = [start + j * stride for j in range(window_length)]
            rows = [video["start_row"] + f for f in indices]
            blobs = dataset.take(rows, columns=["bytes"]).column("bytes").to_pylist()
            sample = {
                "video": np.stack([decode(blob) for blob in blobs]),
                "video_idx": place,
                "filename": video["path"],
                "start_frame": start,
                "frame_indices": indices,
                "sample_idx": len(samples),
            }
            sample.update(video.get("metadata") or {})
            samples.append(sample)
    return samples
