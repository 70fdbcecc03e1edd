"""Widgets of `mq top`: the header, the live table and the command/filter prompt."""
