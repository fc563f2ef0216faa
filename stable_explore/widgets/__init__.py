"""Notebook widgets (anywidget): the shard browser. Importing this needs the ``lab`` extra."""

from __future__ import annotations

from stable_explore.widgets.browser import ShardBrowser

__all__ = ["ShardBrowser"]
