"""Run the C++ RocketMQ client's producer once against a name server, in its own process.

Usage: python namesrv_cpp_probe.py NAMESRV_ADDR TOPIC
Prints one JSON line: {"ok": bool, "error": str | null}. The C++ library logs to
$HOME/logs/rocketmq-cpp/, which is where the test reads what the client parsed; the
test gives this process its own HOME so the log is private to one run.
"""

from __future__ import annotations

import json
import sys

from rocketmq.client import Message, Producer


def main(namesrv: str, topic: str) -> None:
    producer = Producer("PG_NAMESRV_COMPAT", timeout=3000)
    producer.set_namesrv_addr(namesrv)
    producer.start()
    msg = Message(topic)
    msg.set_body(b"namesrv compat probe")
    try:
        producer.send_sync(msg)
        result = {"ok": True, "error": None}
    except Exception as exc:  # noqa: BLE001 - the C++ error text is what we report
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    producer.shutdown()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
