"""Send a widget a request as its page does (anywidget's command form) and catch the reply."""

from __future__ import annotations

from typing import Any

_ids = iter(range(1, 1 << 30))


def invoke(
    browser: Any, name: str, msg: dict[str, Any] | None = None, buffers: list[bytes] | None = None
) -> tuple[dict[str, Any], list[bytes]]:
    """Run the page's request ``name`` through the widget's message handler; return the reply and its buffers."""
    request_id = f"test-{next(_ids)}"
    replies: list[tuple[dict[str, Any], list[bytes]]] = []
    send = browser.send

    def catch(content: dict[str, Any], buffers: Any = None) -> None:
        if content.get("kind") == "anywidget-command-response" and content.get("id") == request_id:
            replies.append((content["response"], list(buffers or [])))
        send(content, buffers)

    browser.send = catch
    try:
        browser._on_message(
            browser, {"kind": "anywidget-command", "id": request_id, "name": name, "msg": msg or {}}, buffers or []
        )
    finally:
        browser.send = send
    assert len(replies) == 1, f"{name}: {len(replies)} replies"
    return replies[0]
