"""The exceptions the client raises: one base class so callers can catch everything mq-specific."""

from __future__ import annotations


class MQClientError(Exception):
    """A client-side failure: validation, no route, no broker, a budget spent."""


class MQBrokerError(MQClientError):
    """A broker or name server answered with a non-success response code."""

    def __init__(self, code: int, remark: str | None) -> None:
        super().__init__(f"CODE: {code} DESC: {remark}")
        self.code = code
        self.remark = remark


class NotAvailable(MQClientError):
    """The server does not offer this operation (e.g. an mq-private request sent to Apache RocketMQ)."""
