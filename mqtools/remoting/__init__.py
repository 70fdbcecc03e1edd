"""RocketMQ remoting protocol: frames, commands, headers, bodies and asyncio transport."""

from mqtools.remoting.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import (
    HeaderError,
    ProtocolError,
    RemotingConnectError,
    RemotingConnectionClosed,
    RemotingError,
    RemotingTimeoutError,
)

__all__ = [
    "HeaderError",
    "LanguageCode",
    "ProtocolError",
    "RemotingCommand",
    "RemotingConnectError",
    "RemotingConnectionClosed",
    "RemotingError",
    "RemotingTimeoutError",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
]
