"""Notebook widgets (anywidget): the shard browser and the issues panel. Importing this needs the ``lab`` extra."""

from __future__ import annotations

from stable_explore.widgets.browser import ShardBrowser
from stable_explore.widgets.issues_panel import IssuesPanel

__all__ = ["IssuesPanel", "ShardBrowser"]
