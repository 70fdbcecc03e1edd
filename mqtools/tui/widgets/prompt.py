"""The one-line prompt of `:` (switch view) and `/` (filter), k9s style, hidden until asked for."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input


class Prompt(Input):
    """Enter submits (`Prompt.Done`), escape cancels; the mode is ':' or '/'."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel", show=False)]

    class Done(Message):
        def __init__(self, mode: str, value: str | None) -> None:
            super().__init__()
            self.mode = mode
            self.value = value
            """None when cancelled."""

    def __init__(self) -> None:
        super().__init__(id="prompt")
        self.mode = ":"

    def open(self, mode: str, value: str = "") -> None:
        self.mode = mode
        self.placeholder = "brokers | ha | topics | groups | namesrv | proxies" if mode == ":" else "regex (!regex inverts)"
        self.value = value
        self.display = True
        self.focus()

    def close(self) -> None:
        self.display = False

    async def action_cancel(self) -> None:
        self.close()
        self.post_message(self.Done(self.mode, None))

    async def _on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.close()
        self.post_message(self.Done(self.mode, event.value))
