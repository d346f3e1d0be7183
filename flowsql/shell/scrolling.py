"""The keys of the shell's full-screen views (the pager, the table view of a streaming
result): one definition, so both scroll alike."""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

#: far enough to reach either end; the views clamp the offset to what they show
_ANY_LENGTH = 10**9


def scrolling_keys(offset: list[int], page: Callable[[], int]) -> KeyBindings:
    """``q`` / Ctrl-C leave the view; Down/Enter and Up move a line, PageDown/Space and
    PageUp move ``page()`` lines, Home and End go to either end. ``offset[0]`` is the first
    line shown; the view clamps it when it draws."""
    bindings = KeyBindings()

    @bindings.add("q")
    @bindings.add("c-c")
    def _leave(event: KeyPressEvent) -> None:
        event.app.exit()

    def scroll(by: int) -> None:
        offset[0] = max(0, offset[0] + by)

    for key, lines in (("down", lambda: 1), ("enter", lambda: 1), ("up", lambda: -1),
                       ("pagedown", page), ("space", page),
                       ("pageup", lambda: -page()),
                       ("home", lambda: -_ANY_LENGTH), ("end", lambda: _ANY_LENGTH)):
        bindings.add(key)(lambda event, lines=lines: scroll(lines()))
    return bindings
