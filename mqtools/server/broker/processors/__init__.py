"""Broker request processors; each module has `register(server, controller)`."""
