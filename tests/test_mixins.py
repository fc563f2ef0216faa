"""``CachedDataset``'s mixins declare the dataset's members they use once, in ``dataset/_members.py``.

``ShardBrowser``'s mixins likewise, in ``widgets/_members.py`` (before: seven ``if TYPE_CHECKING:`` copies, 66
declarations, ``where_boxes``' eleven-parameter signature repeated whole in ``_box_histograms.py``).

Before, each mixin (``_habits``, ``_export``, ``_splits``, ``_rows``, ``_formats``, ``_labels``) carried its own
``if TYPE_CHECKING:`` copy of the members (37 declarations of 24 members in six copies; ``_all_rows`` in
four of them). Now mypy checks ``CachedDataset``'s definitions against the one declaration.
"""

from __future__ import annotations

import ast
from pathlib import Path

from stable_explore.dataset import CachedDataset
from stable_explore.dataset._members import DatasetMembers
from stable_explore.widgets._members import BrowserMembers

DATASET = Path(__file__).resolve().parents[1] / "stable_explore" / "dataset"
WIDGETS = DATASET.parent / "widgets"


def _class_level_type_checking_blocks(source: str) -> list[str]:
    """The classes of ``source`` with an ``if TYPE_CHECKING:`` block in their body."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Name) and stmt.test.id == "TYPE_CHECKING":
                    found.append(node.name)
    return found


def test_the_finder_sees_a_class_level_block() -> None:
    planted = "class Mixin:\n    if TYPE_CHECKING:\n        def _view(self) -> int: ...\n"
    assert _class_level_type_checking_blocks(planted) == ["Mixin"]


def test_every_mixin_derives_from_the_one_declaration() -> None:
    mixins = [base for base in CachedDataset.__bases__ if base is not object]
    assert mixins
    assert all(issubclass(base, DatasetMembers) for base in mixins), [
        b for b in mixins if not issubclass(b, DatasetMembers)
    ]


def test_no_mixin_declares_the_dataset_members_again() -> None:
    copies = {
        path.name: found
        for path in sorted(DATASET.glob("*.py"))
        if path.name != "_members.py" and (found := _class_level_type_checking_blocks(path.read_text(encoding="utf-8")))
    }
    assert not copies, f"declare what CachedDataset provides in dataset/_members.py (DatasetMembers), not in {copies}"


def test_every_browser_mixin_derives_from_the_one_declaration() -> None:
    from stable_explore.widgets.browser import ShardBrowser

    mixins = [base for base in ShardBrowser.__bases__ if base.__module__.startswith("stable_explore.")]
    assert len(mixins) >= 8
    assert all(issubclass(base, BrowserMembers) for base in mixins), [
        b for b in mixins if not issubclass(b, BrowserMembers)
    ]


def test_no_browser_mixin_declares_the_browser_members_again() -> None:
    copies = {
        path.name: found
        for path in sorted(WIDGETS.glob("*.py"))
        if path.name != "_members.py" and (found := _class_level_type_checking_blocks(path.read_text(encoding="utf-8")))
    }
    assert not copies, f"declare what ShardBrowser provides in widgets/_members.py (BrowserMembers), not in {copies}"
