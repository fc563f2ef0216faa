"""Notebook widgets (anywidget): the shard browser and the embedding map. Importing this needs the ``lab`` extra."""

from __future__ import annotations

from stable_explore.widgets.browser import ShardBrowser
from stable_explore.widgets.embedding_map import EmbeddingMap

__all__ = ["EmbeddingMap", "ShardBrowser"]
