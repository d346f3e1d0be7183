"""A pager for batch results longer than the screen: a full-screen view of the text,
scrolled with Up/Down, PageUp/PageDown/Space, Home/End; ``q``, Enter at the end or Ctrl-C
leaves it. The shell pages only when it writes to a terminal; piped output is never paged.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from prompt_toolkit.application import Application
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl

from flowsql.shell.scrolling import scrolling_keys

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

__all__ = ["needs_paging", "page"]


def needs_paging(text: str) -> bool:
    """True when ``text`` has more lines than the terminal shows at once (the prompt's line
    kept free)."""
    return text.count("\n") + 1 > shutil.get_terminal_size().lines - 1


def page(text: str, *, input: Input | None = None, output: Output | None = None) -> None:
    """Show ``text`` until the user leaves."""
    lines = text.split("\n")
    offset = [0]

    def height() -> int:
        return max(1, app.output.get_size().rows - 1)

    def visible() -> str:
        offset[0] = max(0, min(offset[0], len(lines) - height()))
        return "\n".join(lines[offset[0]:offset[0] + height()])

    def status() -> str:
        last = min(len(lines), offset[0] + height())
        return f" lines {offset[0] + 1}-{last} of {len(lines)} | q: quit"

    bindings = scrolling_keys(offset, height)
    app: Application[None] = Application(
        layout=Layout(HSplit([Window(FormattedTextControl(visible), wrap_lines=False),
                              Window(FormattedTextControl(status), height=1,
                                     style="reverse")])),
        key_bindings=bindings, full_screen=True, input=input, output=output)
    app.run()
