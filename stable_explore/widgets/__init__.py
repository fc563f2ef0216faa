"""Notebook widgets (anywidget): the shard browser, the issues panel, the embedding map and the confusion matrix.

Importing this needs the ``lab`` extra.
"""

from __future__ import annotations

from stable_explore.widgets.browser import ShardBrowser
from stable_explore.widgets.confusion_matrix import ConfusionMatrixWidget
from stable_explore.widgets.embedding_map import EmbeddingMap
from stable_explore.widgets.issues_panel import IssuesPanel

__all__ = ["ConfusionMatrixWidget", "EmbeddingMap", "IssuesPanel", "ShardBrowser"]
