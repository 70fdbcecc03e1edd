"""Textual live view (installed as mqtools.tui)."""
