"""What the browser's page asks the kernel: one request, one handler (the layer is :mod:`._requests`).

A handler takes the browser, the request's ``msg`` and its buffers, and returns the response and its
buffers (a page of thumbnails, a detail's image); it acts through the browser's public methods.

What the kernel starts itself (a page after ``browser.page = 2`` in code, the detail refreshed by
a save, a version deleted under the browser) is still pushed to every view as ``{"type": ...}``.

Examples
--------
>>> sorted(COMMANDS.handlers)[:4]
['add_box', 'back', 'clear', 'click']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stable_explore.widgets._requests import OK, Buffers, Commands, Reply, Request

if TYPE_CHECKING:
    from stable_explore.widgets.browser import ShardBrowser

__all__ = ["COMMANDS"]

# "refresh", "detail" and "detail_closed" are the page drawing itself, not the user's next action
COMMANDS = Commands("browser", quiet=frozenset({"refresh", "detail", "detail_closed"}))


def _number_or_none(value: Any) -> float | None:
    if value is None or value == "":
        return None
    return float(value)


@COMMANDS.command("refresh")
def _refresh(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """The current page (a view asks for it when it is drawn)."""
    return browser.page_reply()


@COMMANDS.command("detail")
def _detail(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """One row's detail; ``step`` moves from ``row`` in the order shown; ``full``: the image at its stored size."""
    row = int(msg["row"])
    if msg.get("step"):
        row = browser.neighbour(row, int(msg["step"]))
    return browser.open_detail(row, full=bool(msg.get("full")))


@COMMANDS.command("detail_closed")
def _detail_closed(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    browser.close_detail()
    return OK, []


@COMMANDS.command("where")
def _where(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    browser.where(
        str(msg["column"]),
        min=_number_or_none(msg.get("min")),
        max=_number_or_none(msg.get("max")),
        equals=msg.get("equals") if msg.get("equals") not in ("", None) else None,
        contains=msg.get("contains") or None,
        below=_number_or_none(msg.get("below")),
    )
    return OK, []


@COMMANDS.command("where_boxes")
def _where_boxes(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """The filter bar on a Boxes column: keep the images with a box of a class, an area, a score."""
    cls = msg.get("cls")
    browser.where_boxes(
        str(msg["column"]),
        cls=None if cls in ("", None) else int(cls),
        min_area=_number_or_none(msg.get("min_area")),
        max_area=_number_or_none(msg.get("max_area")),
        min_score=_number_or_none(msg.get("min_score")),
    )
    return OK, []


@COMMANDS.command("where_bin")
def _where_bin(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """A click on a histogram's bar: keep the rows that bar counts."""
    browser.where_bin(str(msg["column"]), int(msg["bin"]))
    return OK, []


@COMMANDS.command("where_box_bin")
def _where_box_bin(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """A click on a bar of a Boxes column's histogram: keep the images with a box in it."""
    browser.where_box_bin(str(msg["column"]), str(msg["what"]), int(msg["bin"]))
    return OK, []


@COMMANDS.command("sort")
def _sort(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    browser.sort(str(msg.get("column") or "") or None, descending=bool(msg.get("descending")))
    return OK, []


@COMMANDS.command("click")
def _click(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    browser.click(int(msg["row"]), shift=bool(msg.get("shift")), toggle=bool(msg.get("toggle")))
    return OK, []


@COMMANDS.command("select_page")
def _select_page(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    browser.select_page()
    return OK, []


@COMMANDS.command("clear")
def _clear(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    browser.clear_selection()
    return OK, []


@COMMANDS.command("flag")
def _flag(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    browser.flag_selection()
    return OK, []


@COMMANDS.command("drop_flagged")
def _drop_flagged(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    browser.drop_flagged()
    return OK, []


@COMMANDS.command("relabel")
def _relabel(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    browser.relabel_selection(int(msg["label"]))
    return OK, []


@COMMANDS.command("discard")
def _discard(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    browser.discard()
    return OK, []


@COMMANDS.command("save")
def _save(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    saved = browser.save(str(msg.get("message") or "") or None)
    return {"type": "saved", "ref": saved.ref}, []


@COMMANDS.command("evaluation_rows")
def _evaluation_rows(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """The evaluation's buttons: rows with a false positive, a false negative, or the most confident mistakes."""
    browser.show_evaluation(str(msg["what"]))
    return OK, []


@COMMANDS.command("edit_box")
def _edit_box(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """The detail pane's box editor: relabel (``label``) or delete (``drop``) the ``index``-th box shown.

    The reply is the row's detail again, its boxes with the pending edits.
    """
    row, column, index = int(msg["row"]), str(msg["column"]), int(msg["index"])
    if msg.get("drop"):
        browser.drop_box(row, column, index)
    else:
        browser.relabel_box(row, column, index, int(msg["label"]))
    return browser.open_detail(row)


@COMMANDS.command("add_box")
def _add_box(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """A rectangle dragged over the detail's image: a new box of class ``label`` (``corners`` as fractions)."""
    row = int(msg["row"])
    browser.add_box(row, str(msg["column"]), [float(v) for v in msg["corners"]], int(msg["label"]))
    return browser.open_detail(row)


@COMMANDS.command("similar")
def _similar(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """The detail pane's "Similar rows": the grid shows the row and its nearest neighbours, closest first.

    Images not hashed yet are hashed on a thread first (the reply ``{"type": "hashing"}``; the page
    follows ``similar_progress`` and asks again when it is done).
    """
    if browser.start_similar(int(msg["row"])):
        return {"type": "hashing"}, []
    browser.show_similar(int(msg["row"]))
    return OK, []


@COMMANDS.command("similar_cancel")
def _similar_cancel(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """The progress line's Cancel: stop hashing the images; nothing is kept."""
    browser.cancel_similar()
    return OK, []


@COMMANDS.command("back")
def _back(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """The status line's "back": the grid shown before "similar rows"."""
    browser.back()
    return OK, []


@COMMANDS.command("show_all")
def _show_all(browser: ShardBrowser, msg: Request, buffers: Buffers) -> Reply:
    """The status line's "show all": forget ``show_rows``."""
    browser.show_rows(None)
    return OK, []
