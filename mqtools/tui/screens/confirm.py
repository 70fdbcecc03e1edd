"""The question every write action asks first; y confirms, anything else (n, esc) does not."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("y", "answer(True)", "yes"), Binding("n,escape,q", "answer(False)", "no")]

    def __init__(self, question: str) -> None:
        super().__init__(id="confirm")
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.question, id="confirm-question")
            yield Static("y: do it    n / esc: cancel", id="confirm-keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
