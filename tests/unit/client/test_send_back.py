"""A message the listener refuses goes back to its set's master (CONSUMER_SEND_MSG_BACK); when that master is gone
or does not answer, it is sent as a new message to the group's retry topic on a set that has one, as Apache's
sendMessageBackAsNormalMessage. Until stop 106 the worker asked the slave (which refuses) every 5 s and ran the
listener again, so 20 such messages held every worker and the healthy sets' messages waited."""

from __future__ import annotations

import asyncio

from unit.client.fake_remoting import FakeRemoting, fake_instance

from mqtools.client.consume_service import ConcurrentConsumeService, retry_message
from mqtools.client.offset_store import OffsetStore
from mqtools.client.process_queue import ProcessQueue
from mqtools.client.types import ConsumeResult
from mqtools.common import properties as P
from mqtools.common.message import MessageExt
from mqtools.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import parse_send_v2

RETRY = "%RETRY%G"


def routes() -> dict[str, TopicRouteData]:
    """broker-a has lost its master (its slave is listed); broker-b is whole and holds the retry topic too."""
    headless = [BrokerData("DefaultCluster", "broker-a", {1: "broker-a-s:10911"}),
                BrokerData("DefaultCluster", "broker-b", {0: "broker-b:10911"})]
    return {"T": TopicRouteData([QueueData("broker-a", 1, 1), QueueData("broker-b", 1, 1)], headless),
            RETRY: TopicRouteData([QueueData("broker-b", 1, 1)], headless[1:])}


async def answer(addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
    if cmd.code == RequestCode.SEND_MESSAGE_V2:
        return cmd.response(ResponseCode.SUCCESS, ext_fields={"msgId": "0A", "queueId": "0", "queueOffset": "0"})
    return cmd.response(ResponseCode.SYSTEM_ERROR, "a slave takes no send-back")


async def test_a_message_of_a_set_without_master_goes_to_the_retry_topic_as_a_new_one() -> None:
    remoting = FakeRemoting(routes(), answer)
    instance = fake_instance(remoting)
    await instance.route("T")
    service = ConcurrentConsumeService(instance, "G", lambda msgs: ConsumeResult.RECONSUME_LATER, OffsetStore(),
                                       concurrency=1, max_reconsume_times=16)
    pq = ProcessQueue(MessageQueue("T", "broker-a", 0), 0)
    msg = MessageExt(topic="T", body=b"x", queue_offset=0, msg_id="MSG0", reconsume_times=2,
                     properties={P.KEYS: "k1", P.TRAN_MSG: "true"})
    pq.put([msg])
    pq.next_offset = 1
    service.submit(pq, [msg])
    for _ in range(50):
        if pq.commit_point() == 1:
            break
        await asyncio.sleep(0.001)
    assert pq.commit_point() == 1, "the refused message is done once it is in the retry topic"
    assert not remoting.broker_requests(RequestCode.CONSUMER_SEND_MSG_BACK), "no master to send it back to"
    (sent,) = remoting.broker_requests(RequestCode.SEND_MESSAGE_V2)
    header = parse_send_v2(sent.cmd.ext_fields)
    assert (sent.addr, header.topic, header.reconsume_times, header.max_reconsume_times) == (
        "broker-b:10911", RETRY, 3, 16)
    props = P.string_to_properties(header.properties or "")
    assert (props[P.RETRY_TOPIC], props[P.ORIGIN_MESSAGE_ID], props[P.DELAY], props[P.KEYS]) == ("T", "MSG0", "5", "k1")
    assert P.TRAN_MSG not in props and P.RECONSUME_TIME not in props and P.MAX_RECONSUME_TIMES not in props
    service.close()


def test_a_message_already_retried_keeps_its_first_origin_id() -> None:
    msg = MessageExt(topic=RETRY, body=b"x", msg_id="MSG1", properties={P.ORIGIN_MESSAGE_ID: "MSG0"})
    assert retry_message("G", msg, 16).properties[P.ORIGIN_MESSAGE_ID] == "MSG0"
