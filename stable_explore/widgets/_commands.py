"""What the browser's page asks the kernel: one command, one handler.

The page sends a request ``{"kind": "anywidget-command", "id": n, "name": "where", "msg": {...}}``
(anywidget's request/reply form) and waits for the reply with the same id,
``{"kind": "anywidget-command-response", "id": n, "response": {...}}``, whose binary buffers carry
images (a page of thumbnails, a detail's image). A handler takes the browser and the request's
``msg`` and returns the response and its buffers; it acts through the browser's public methods.
An error becomes the response ``{"type": "error", "message": ...}`` and the status line, never a
lost reply.

What the kernel starts itself (a page after ``browser.page = 2`` in code, the detail refreshed by
a save, a version deleted under the browser) is still pushed to every view as ``{"type": ...}``.

Examples
--------
>>> sorted(COMMANDS)[:4]
['back', 'clear', 'click', 'detail']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stable_explore.errors import InvalidOptionError
from stable_explore.widgets._errors import error_status

if TYPE_CHECKING:
    from stable_explore.widgets.browser import ShardBrowser

__all__ = ["COMMANDS", "REQUEST", "RESPONSE", "Reply", "handle"]

REQUEST = "anywidget-command"
RESPONSE = "anywidget-command-response"

Reply = tuple[dict[str, Any], list[bytes]]
Handler = Callable[["ShardBrowser", dict[str, Any]], Reply]

COMMANDS: dict[str, Handler] = {}
OK: dict[str, Any] = {"type": "ok"}
_QUIET = {"refresh", "detail", "detail_closed"}  # requests that are not the user's next action


def command(name: str) -> Callable[[Handler], Handler]:
    """Register ``handler`` as what the page's request ``name`` does."""

    def register(handler: Handler) -> Handler:
        COMMANDS[name] = handler
        return handler

    return register


def _number_or_none(value: Any) -> float | None:
    if value is None or value == "":
        return None
    return float(value)


@command("refresh")
def _refresh(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    """The current page (a view asks for it when it is drawn)."""
    return browser.page_reply()


@command("detail")
def _detail(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    """One row's detail; ``step`` moves from ``row`` in the order shown; ``full``: the image at its stored size."""
    row = int(msg["row"])
    if msg.get("step"):
        row = browser.neighbour(row, int(msg["step"]))
    return browser.open_detail(row, full=bool(msg.get("full")))


@command("detail_closed")
def _detail_closed(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    browser.close_detail()
    return OK, []


@command("where")
def _where(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    browser.where(
        str(msg["column"]),
        min=_number_or_none(msg.get("min")),
        max=_number_or_none(msg.get("max")),
        equals=msg.get("equals") if msg.get("equals") not in ("", None) else None,
        contains=msg.get("contains") or None,
        below=_number_or_none(msg.get("below")),
    )
    return OK, []


@command("where_bin")
def _where_bin(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    """A click on a histogram's bar: keep the rows that bar counts."""
    browser.where_bin(str(msg["column"]), int(msg["bin"]))
    return OK, []


@command("sort")
def _sort(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    browser.sort(str(msg.get("column") or "") or None, descending=bool(msg.get("descending")))
    return OK, []


@command("click")
def _click(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    browser.click(int(msg["row"]), shift=bool(msg.get("shift")), toggle=bool(msg.get("toggle")))
    return OK, []


@command("select_page")
def _select_page(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    browser.select_page()
    return OK, []


@command("clear")
def _clear(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    browser.clear_selection()
    return OK, []


@command("flag")
def _flag(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    browser.flag_selection()
    return OK, []


@command("drop_flagged")
def _drop_flagged(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    browser.drop_flagged()
    return OK, []


@command("relabel")
def _relabel(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    browser.relabel_selection(int(msg["label"]))
    return OK, []


@command("discard")
def _discard(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    browser.discard()
    return OK, []


@command("save")
def _save(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    saved = browser.save(str(msg.get("message") or "") or None)
    return {"type": "saved", "ref": saved.ref}, []


@command("similar")
def _similar(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    """The detail pane's "Similar rows": the grid shows the row and its nearest neighbours, closest first."""
    browser.show_similar(int(msg["row"]))
    return OK, []


@command("back")
def _back(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    """The status line's "back": the grid shown before "similar rows"."""
    browser.back()
    return OK, []


@command("show_all")
def _show_all(browser: ShardBrowser, msg: dict[str, Any]) -> Reply:
    """The status line's "show all": forget ``show_rows``."""
    browser.show_rows(None)
    return OK, []


def handle(browser: ShardBrowser, name: str, msg: dict[str, Any]) -> Reply:
    """Run the command ``name``; an error is the reply (and the status line), not an exception."""
    handler = COMMANDS.get(name)
    if name not in _QUIET and browser.status:
        browser.status = ""  # what the last action said is done with once the user acts again
    try:
        if handler is None:
            message = f"unknown command {name!r}; the browser knows {sorted(COMMANDS)}"
            raise InvalidOptionError(message)
        return handler(browser, msg)
    except Exception as exc:  # noqa: BLE001 - the page shows it and the log keeps it (a bug's traceback too)
        text = error_status(exc, "browser", name)
        browser.status = text
        return {"type": "error", "message": text}, []
