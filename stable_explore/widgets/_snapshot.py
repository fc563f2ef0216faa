"""The static snapshot shown beside the live shard browser, for when the widget cannot be drawn.

A notebook is saved with every output. Without saved widget state, JupyterLab cannot find the
browser's model when the notebook is reopened and prints "Error displaying widget: model not
found" in its place. So the browser is displayed as two outputs: this snapshot (the dataset's
card) and then the widget. The snapshot's style (applied only where the notebook is trusted,
as a notebook you saved yourself is) hides:

- the snapshot, while the live browser is drawn in the output after it;
- the widget's output, while it holds no live browser (the error message of a reopened notebook).

GitHub and nbviewer show the snapshot and the widget's text form.

Examples
--------
>>> html = snapshot_html("<div>card</div>", "abc")
>>> 'data-testid="se-static"' in html, "<div>card</div>" in html
(True, True)
"""

from __future__ import annotations

import html
from typing import Any

from stable_explore.widgets._members import BrowserMembers

__all__ = ["SnapshotMixin", "display_with_snapshot", "snapshot_html"]

_STYLE = """
.jp-OutputArea-child:has(.{marker}):has(+ .jp-OutputArea-child .{live}) {{ display: none; }}
.jp-OutputArea-child:has(.{marker}) + .jp-OutputArea-child:not(:has(.{live})) {{ display: none; }}
.se-static-note {{ color: var(--jp-ui-font-color2, #555); font-size: 12px; margin: 2px 0 4px; }}
"""


def snapshot_html(
    card_html: str,
    model_id: str,
    *,
    note: str = "Shard browser, static snapshot: run the cell to browse the rows.",
    live: str = "se-browser",
    marker: str = "se-static",
) -> str:
    """The snapshot output: a note, the dataset's card (already escaped), and the style described above.

    ``live`` is the class of the live widget's root, ``marker`` the snapshot's own (one per kind of
    widget, so one widget's snapshot never hides another's output).
    """
    return (
        f'<div class="{marker}" data-testid="se-static" data-se-model="{html.escape(model_id)}">'
        f"<style>{_STYLE.format(marker=marker, live=live)}</style>"
        f'<div class="se-static-note">{html.escape(note)}</div>{card_html}</div>'
    )


def display_with_snapshot(snapshot: str, bundle: Any) -> None:
    """Display two outputs: ``snapshot`` (from :func:`snapshot_html`), then the live widget.

    ``bundle`` is the widget's ``_repr_mimebundle_()`` (its data and metadata). What the embedding
    map and the issues panel do, as the shard browser does (see above).
    """
    import IPython.display

    display: Any = IPython.display.display  # untyped
    data, metadata = bundle
    display({"text/html": snapshot}, raw=True)
    display({k: v for k, v in data.items() if k != "text/html"}, raw=True, metadata=metadata)


class SnapshotMixin(BrowserMembers):
    """How the shard browser displays itself: the snapshot, then the widget."""

    def snapshot_html(self) -> str:
        """The static snapshot shown where the live widget cannot be (see :meth:`_ipython_display_`)."""
        return snapshot_html(self._card_html(), self.model_id)

    def _ipython_display_(self, **kwargs: Any) -> None:
        """Two outputs: a static snapshot (the dataset's card), then the live widget.

        A notebook saved without widget state and reopened has no model for the widget: JupyterLab
        would show "Error displaying widget: model not found". The snapshot's own style hides that
        message there, and hides the snapshot itself while the live widget is shown after it.
        """
        import IPython.display

        display: Any = IPython.display.display  # untyped
        data, metadata = self._repr_mimebundle_(**kwargs)
        widget_bundle = {k: v for k, v in data.items() if k != "text/html"}
        state = self._state
        state.display_id = state.display_id or f"se-static-{self.model_id}"
        display({"text/html": self.snapshot_html()}, raw=True, display_id=state.display_id)
        display(widget_bundle, raw=True, metadata=metadata)

    def _update_snapshot(self) -> None:
        """Point the saved snapshot at the version now browsed (after ``save``)."""
        display_id = self._state.display_id
        if display_id is None:
            return
        try:
            import IPython.display

            update_display: Any = IPython.display.update_display  # untyped
            update_display({"text/html": self.snapshot_html()}, raw=True, display_id=display_id)
        except Exception:  # noqa: BLE001 - outside a kernel there is nothing to update
            return
