"""Screens of `mq top`: the main view, help and confirmation."""
