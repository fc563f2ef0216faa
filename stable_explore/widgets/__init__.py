"""Notebook widgets (anywidget): the shard browser, the issues panel and the embedding map.

Importing this needs the ``lab`` extra.
"""

from __future__ import annotations

from stable_explore.widgets.browser import ShardBrowser
from stable_explore.widgets.embedding_map import EmbeddingMap
from stable_explore.widgets.issues_panel import IssuesPanel

__all__ = ["EmbeddingMap", "IssuesPanel", "ShardBrowser"]
