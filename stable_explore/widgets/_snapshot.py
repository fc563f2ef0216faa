"""The static snapshot shown beside the live shard browser, for when the widget cannot be drawn.

A notebook is saved with every output. Without saved widget state, JupyterLab cannot find the
browser's model when the notebook is reopened and prints "Error displaying widget: model not
found" in its place. So the browser is displayed as two outputs: this snapshot (the dataset's
card) and then the widget. The snapshot's style (applied only where the notebook is trusted,
as a notebook you saved yourself is) hides:

- the snapshot, while the live browser is drawn in the output after it;
- the widget's output, while it holds no live browser (the error message of a reopened notebook).

GitHub and nbviewer show the snapshot and the widget's text form.

Example
-------
>>> html = snapshot_html("<div>card</div>", "abc")
>>> 'data-testid="se-static"' in html, "<div>card</div>" in html
(True, True)
"""

from __future__ import annotations

import html

__all__ = ["snapshot_html"]

_STYLE = """
.jp-OutputArea-child:has(.se-static):has(+ .jp-OutputArea-child .se-browser) { display: none; }
.jp-OutputArea-child:has(.se-static) + .jp-OutputArea-child:not(:has(.se-browser)) { display: none; }
.se-static-note { color: var(--jp-ui-font-color2, #555); font-size: 12px; margin: 2px 0 4px; }
"""


def snapshot_html(card_html: str, model_id: str) -> str:
    """The snapshot output: a note, the dataset's card (already escaped), and the style described above."""
    note = "Shard browser, static snapshot: run the cell to browse the rows."
    return (
        f'<div class="se-static" data-testid="se-static" data-se-model="{html.escape(model_id)}">'
        f"<style>{_STYLE}</style>"
        f'<div class="se-static-note">{html.escape(note)}</div>{card_html}</div>'
    )
