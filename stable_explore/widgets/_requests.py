"""One request/reply layer for every widget: what a page asks the kernel, and the one reply it gets.

A page sends ``{"kind": "anywidget-command", "id": n, "name": "hover", "msg": {...}}`` (anywidget's
request/reply form, with binary buffers either way) and waits, with a timeout of its own
(``static/lib/requests.js``), for ``{"kind": "anywidget-command-response", "id": n, "response": {...}}``.
Each widget class keeps a :class:`Commands` table of named handlers. A handler takes the widget, the
request's ``msg`` and its buffers, acts through the widget's public methods and returns the response and
its buffers. An error becomes the response ``{"type": "error", "message": ...}`` and the widget's status
line (logged by :func:`~stable_explore.widgets._errors.error_status`), never a reply that does not come.

What the kernel starts itself (a selection made in code, a page after ``browser.page = 2``) is pushed to
every view as a plain ``{"type": ...}`` message, outside this layer.

Examples
--------
>>> commands = Commands("demo")
>>> @commands.command("echo")
... def _echo(widget, msg, buffers):
...     return {"type": "echo", "said": msg["text"]}, []
>>> class Widget:
...     status = ""
>>> commands.handle(Widget(), "echo", {"text": "hi"}, [])
({'type': 'echo', 'said': 'hi'}, [])
>>> commands.handle(Widget(), "shout", {}, [])[0]["message"]
"error: InvalidOptionError: unknown command 'shout'; the demo knows ['echo']"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from stable_explore.errors import InvalidOptionError
from stable_explore.widgets._errors import error_status

__all__ = ["OK", "REQUEST", "RESPONSE", "Buffers", "Commands", "Reply", "Request"]

REQUEST = "anywidget-command"
RESPONSE = "anywidget-command-response"

Request = dict[str, Any]  # a request's JSON content from the page (its fields depend on the command)
Buffers = list[bytes | memoryview]  # a request's binary buffers (the kernel hands them over as memoryviews)
Reply = tuple[Mapping[str, object], list[bytes]]  # a response (one of the widget's message TypedDicts) and its buffers
OK: Mapping[str, object] = {"type": "ok"}


class _Widget(Protocol):
    status: str

    def send(self, content: Mapping[str, object], buffers: list[bytes] | None = None) -> None: ...


Handler = Callable[[Any, Request, Buffers], Reply]


class Commands:
    """The requests one kind of widget answers: ``name -> handler(widget, msg, buffers) -> Reply``.

    ``quiet`` names the requests that are not the user's next action (a page drawing itself): they
    leave the status line as it is; any other request clears what the last action said.
    """

    def __init__(self, widget_name: str, *, quiet: frozenset[str] = frozenset()) -> None:
        self.widget_name = widget_name
        self.handlers: dict[str, Handler] = {}
        self.quiet = quiet

    def command(self, name: str) -> Callable[[Handler], Handler]:
        """Register the decorated function as what the page's request ``name`` does."""

        def register(handler: Handler) -> Handler:
            self.handlers[name] = handler
            return handler

        return register

    def handle(self, widget: _Widget, name: str, msg: Request, buffers: Buffers) -> Reply:
        """Run the request ``name``; an error is the reply (and the status line), not an exception."""
        handler = self.handlers.get(name)
        if name not in self.quiet and widget.status:
            widget.status = ""  # what the last action said is done with once the user acts again
        try:
            if handler is None:
                message = f"unknown command {name!r}; the {self.widget_name} knows {sorted(self.handlers)}"
                raise InvalidOptionError(message)
            return handler(widget, msg, buffers)
        except Exception as exc:  # noqa: BLE001 - the page shows it and the log keeps it (a bug's traceback too)
            text = error_status(exc, self.widget_name, name)
            widget.status = text
            return {"type": "error", "message": text}, []

    def answer(self, widget: _Widget, content: object, buffers: Buffers | None) -> bool:
        """If ``content`` is a request, run it and send its reply to the page; False for anything else."""
        if not isinstance(content, dict) or content.get("kind") != REQUEST:
            return False
        msg = content.get("msg")
        response, reply_buffers = self.handle(
            widget, str(content.get("name")), msg if isinstance(msg, dict) else {}, list(buffers or [])
        )
        widget.send({"kind": RESPONSE, "id": content.get("id"), "response": response}, reply_buffers)
        return True
