"""A message whose properties do not fit a batch entry's 2-byte length (over 32767 bytes) with auto-batching.

The review's run: one such message among seven async sends made encode_batch raise a bare ValueError that failed
the six others gathered with it. It is not batchable now: it goes alone (where a broker refuses it with
MESSAGE_ILLEGAL, as it refuses it without auto-batching) and the others are untouched; an explicit batch holding
one is refused with a client error, never a ValueError."""

from __future__ import annotations

import asyncio

import pytest
from unit.client.test_batch_accumulator import make, messages, ticks

from mqtools.client.errors import MQClientError
from mqtools.client.types import SendResult
from mqtools.common import properties as P
from mqtools.common.message import Message
from mqtools.remoting.codes import RequestCode


def big() -> Message:
    return Message("T", b"big", properties={"bigprop": "x" * 40000})


async def test_a_message_too_big_for_a_batch_entry_goes_alone_and_the_others_are_batched() -> None:
    producer, broker, _ = make()
    gate = broker.hold(0)
    small = messages(7)
    futures = [producer.send_async(m) for m in small[:3]]
    odd = big()
    futures.append(producer.send_async(odd))
    futures += [producer.send_async(m) for m in small[3:]]
    await ticks()
    gate.set()
    outcomes = await asyncio.gather(*futures, return_exceptions=True)
    assert all(isinstance(o, SendResult) for o in outcomes), outcomes
    assert [odd.properties[P.UNIQ_KEY]] in broker.batches, "the big one went in a request of its own"
    alone = [s for s in producer.instance.remoting.sent if s.cmd.code == RequestCode.SEND_MESSAGE_V2]  # type: ignore[attr-defined]
    assert len(alone) == 1 and "bigprop" in alone[0].cmd.ext_fields["i"]
    assert sorted(len(b) for b in broker.batches) == [1, 1, 6]


async def test_an_explicit_batch_with_such_a_message_is_refused_with_a_client_error() -> None:
    producer, broker, _ = make()
    with pytest.raises(MQClientError, match=r"properties .* over 32767"):
        await producer.send_batch([*messages(2), big()])
    assert broker.batches == []
