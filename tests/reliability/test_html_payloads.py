"""Issue 12's figure: 23 HTML payloads in the 6 places user data reaches HTML are all shown as text."""

from __future__ import annotations

from pathlib import Path

from tests.reliability.trials import HTML_PAYLOADS, html_payload_trials, inert_and_shown


def test_every_payload_is_escaped_in_every_place(tmp_path: Path) -> None:
    escaped, tried, failures = html_payload_trials(tmp_path)
    assert failures == []
    assert (escaped, tried) == (23 * 6, 23 * 6)
    assert len(HTML_PAYLOADS) == 23


def test_the_check_itself_catches_markup() -> None:
    assert inert_and_shown("<div>&lt;b&gt;</div>", "<b>") is None
    assert inert_and_shown("<div><script>x</script></div>", "x") == "a <script> element reached the page"
    assert inert_and_shown("<img src=x onerror=y>", "") is not None
    assert inert_and_shown("<div>a</div>", "b") == "the text is not shown as it is"
