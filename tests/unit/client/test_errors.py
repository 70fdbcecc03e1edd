"""Errors by name: a server's response code picks the exception class a caller catches."""

from __future__ import annotations

import pytest

from mqtools.client import errors
from mqtools.client.errors import (
    GroupConsumeDisabledError,
    MQBrokerError,
    MQClientError,
    NoPermissionError,
    NotAvailable,
    SubscriptionGroupNotExistError,
    TopicNotExistError,
    broker_error,
    for_code,
)
from mqtools.remoting.codes import ResponseCode


def test_each_named_class_stands_for_one_response_code() -> None:
    classes = [c for c in vars(errors).values()
               if isinstance(c, type) and issubclass(c, MQBrokerError) and c is not MQBrokerError and c.REMARK is None]
    codes = [c.CODE for c in classes]
    assert len(codes) == len(set(codes)) and all(isinstance(ResponseCode(c), ResponseCode) for c in codes)
    assert all(for_code(c.CODE) is c for c in classes)  # type: ignore[arg-type]


def test_a_code_without_a_class_is_the_base_and_keeps_code_and_remark() -> None:
    exc = broker_error(9999, "odd")
    assert type(exc) is MQBrokerError and (exc.code, exc.remark) == (9999, "odd")
    assert str(exc) == "CODE: 9999 DESC: odd"


def test_broker_error_is_caught_by_name_and_by_base() -> None:
    with pytest.raises(TopicNotExistError) as caught:
        raise broker_error(ResponseCode.TOPIC_NOT_EXIST, "No topic route info in name server for the topic: T")
    assert caught.value.code == 17 and isinstance(caught.value, MQClientError)
    assert isinstance(broker_error(26, "group x"), SubscriptionGroupNotExistError)
    assert isinstance(broker_error(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "no"), NotAvailable)


def test_a_remark_narrows_its_codes_class_and_anything_else_of_the_code_stays_the_codes() -> None:
    disabled = broker_error(ResponseCode.NO_PERMISSION, "subscription group no permission, G1")
    assert type(disabled) is GroupConsumeDisabledError and isinstance(disabled, NoPermissionError)
    assert disabled.remark == "subscription group no permission, G1"
    for remark in ("the topic[T] pulling message is forbidden", None, ""):
        assert type(broker_error(ResponseCode.NO_PERMISSION, remark)) is NoPermissionError
    assert for_code(ResponseCode.NO_PERMISSION) is NoPermissionError
