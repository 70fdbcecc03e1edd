"""Server-side load balancing on the wire (RocketMQ 5): QUERY_ASSIGNMENT, the message request modes, POLLING_INFO.

A 5.x client with client rebalance off asks the broker which queues it should read (QUERY_ASSIGNMENT 400)
and in which mode (PULL, or POP with queue id -1 meaning "any queue of this broker"). An operator sets the
mode per topic and group (SET_MESSAGE_REQUEST_MODE 401); a slave copies the whole table from its master
(GET_ALL_MESSAGE_REQUEST_MODE 402), whose body is the broker's ``messageRequestMode.json``. POLLING_INFO
(200055) tells how many POP requests are parked on a queue. Shapes are Apache 5.5's
(QueryAssignmentRequestBody, MessageQueueAssignment, SetMessageRequestModeRequestBody,
MessageRequestModeManager, PollingInfoRequestHeader); both client and broker need them, so they live here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mqtools.remoting.bodies import Body, MessageQueue
from mqtools.remoting.headers import Header

#: MessageRequestMode names.
MODE_PULL = "PULL"
MODE_POP = "POP"
MODES = (MODE_PULL, MODE_POP)
#: MessageModel names.
CLUSTERING = "CLUSTERING"
BROADCASTING = "BROADCASTING"
#: The strategy names Apache's QueryAssignmentProcessor knows (AllocateMessageQueueStrategy.getName()).
STRATEGY_AVG = "AVG"
STRATEGY_AVG_BY_CIRCLE = "AVG_BY_CIRCLE"


@dataclass(slots=True)
class QueryAssignmentRequestBody(Body):
    topic: str
    consumer_group: str
    client_id: str
    strategy_name: str = STRATEGY_AVG
    message_model: str = CLUSTERING


@dataclass(slots=True)
class MessageQueueAssignment(Body):
    message_queue: MessageQueue
    mode: str = MODE_PULL
    attachments: dict[str, str] | None = None


@dataclass(slots=True)
class QueryAssignmentResponseBody(Body):
    """None (the field absent) tells the client to keep what it has; an empty list to drop everything."""

    message_queue_assignments: list[MessageQueueAssignment] | None = None


@dataclass(slots=True)
class SetMessageRequestModeRequestBody(Body):
    topic: str
    consumer_group: str
    mode: str = MODE_PULL
    #: A POP consumer also reads the queues of the N consumers after it in the sorted client id list.
    pop_share_queue_num: int = 0


@dataclass(slots=True)
class MessageRequestModeTable(Body):
    """messageRequestMode.json and the GET_ALL_MESSAGE_REQUEST_MODE body: topic -> group -> mode."""

    message_request_mode_map: dict[str, dict[str, SetMessageRequestModeRequestBody]] = field(default_factory=dict)


@dataclass(slots=True)
class PollingInfoRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int


@dataclass(slots=True)
class PollingInfoResponseHeader(Header):
    polling_num: int
