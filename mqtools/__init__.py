"""mq: a RocketMQ-compatible message queue and its ops toolkit."""

__version__ = "0.1.0"
