"""Signals: computed columns that find rows worth a look.

Each signal reads a dataset (or a view) and returns a ``pyarrow.Table`` keyed by ``row`` (the position
``ds[row]``, ``ds.drop`` and ``ds.relabel`` take) and ``key`` (the row's stored key). ``.to_pandas()``
sorts and filters it; its columns can be added to the dataset as a version.

- :func:`exact_duplicates`: rows with byte-identical images (or equal columns), grouped.
- :func:`near_duplicates`: rows whose perceptual hashes are within a threshold, grouped without
  comparing all pairs; :func:`perceptual_hashes` gives the hashes themselves.
- :func:`embedding_duplicates`: rows close in an embedding, each within a radius of its group's first
  row: the second route to near duplicates, for crops the hash misses.
- :func:`extra_copies`: the rows to drop to keep one of each group of copies.
- :func:`box_issues`: boxes outside the image, degenerate, tiny or duplicated, and images without boxes.
- :func:`video_stats`: frames, rate, duration, size, codec, black and frozen stretches of every video;
  :func:`near_duplicate_videos` groups videos whose sampled frames look alike (:func:`video_hashes`).
- :func:`prediction_issues`: a model's confident boxes where the labels have none (missing boxes) or
  another class (wrong classes).
- :func:`image_stats`: width, height, aspect, brightness, contrast, blur, channels, file size.
- :func:`embedding_outliers`: distance to the k nearest neighbours in an embedding.
- :func:`label_issues`: confident learning on predicted probabilities (cleanlab when installed).
- :func:`neighbor_label_issues`: rows whose neighbours in an embedding carry another label.
- :func:`pixel_embeddings`: an offline embedding (PCA of small grey pixels) for when there is no model.
- For the embedding map: a 2D projection of an embedding (:func:`project`), the rows in a box or lasso
  (:func:`rows_in_box`, :func:`rows_in_polygon`) and similar rows by embedding or perceptual hash
  (:func:`similar_rows`; :func:`similarity` chooses what a dataset's rows are compared by).

The signals that decode images take ``num_proc=`` or ``executor=`` (any
``concurrent.futures.Executor``: a Dask client's, Ray's) with the serial result, show a progress bar
over 1,024 rows, and keep what they computed in the home (:mod:`stable_explore.signals.cache`), so the
second call, in any kernel, reads it back.

numpy does the work; scikit-learn (nearest neighbours), pynndescent (approximate neighbours above
50,000 rows) and cleanlab are used when installed (``pip install 'stable-explore[clean]'``).
"""

from __future__ import annotations

from stable_explore.signals.boxes import box_issues, prediction_issues
from stable_explore.signals.duplicates import embedding_duplicates, exact_duplicates, extra_copies, near_duplicates
from stable_explore.signals.embeddings import Embedding, embedding_matrix, pixel_embeddings
from stable_explore.signals.images import image_stats, perceptual_hashes
from stable_explore.signals.labels import label_issues, neighbor_label_issues
from stable_explore.signals.neighbors import embedding_outliers, nearest_neighbors, nearest_rows
from stable_explore.signals.projection import pca_2d, project
from stable_explore.signals.regions import rows_in_box, rows_in_polygon
from stable_explore.signals.similar import hamming_distances, similar_rows
from stable_explore.signals.similarity import Similarity, similarity
from stable_explore.signals.video import near_duplicate_videos, video_hashes, video_stats

__all__ = [
    "Embedding",
    "Similarity",
    "box_issues",
    "embedding_duplicates",
    "embedding_matrix",
    "embedding_outliers",
    "exact_duplicates",
    "extra_copies",
    "hamming_distances",
    "image_stats",
    "label_issues",
    "near_duplicate_videos",
    "near_duplicates",
    "nearest_neighbors",
    "nearest_rows",
    "neighbor_label_issues",
    "pca_2d",
    "perceptual_hashes",
    "pixel_embeddings",
    "prediction_issues",
    "project",
    "rows_in_box",
    "rows_in_polygon",
    "similar_rows",
    "similarity",
    "video_hashes",
    "video_stats",
]
