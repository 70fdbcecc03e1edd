"""A slave's dispatch of replicated bytes tells a torn tail still arriving (frames are not aligned to messages) from
bytes that are not its log's continuation (a master that streamed from the middle of one of its own messages): the
HA client stops on the second (dispatch.invalid_at), never on the first."""

from __future__ import annotations

from unit.store.store_helpers import inner, tiny_config

from mqtools.server.store.message_store import MessageStore


async def _stores(tmp_path) -> tuple[MessageStore, MessageStore, bytes, list[int]]:
    master = MessageStore(tiny_config(tmp_path / "m", mapped_file_size_commit_log=64 * 1024))
    slave = MessageStore(tiny_config(tmp_path / "s", broker_role="SLAVE", mapped_file_size_commit_log=64 * 1024))
    await master.start()
    await slave.start()
    starts = [(await master.put_message(inner(body=b"%03d" % i * 90))).append.wrote_offset for i in range(6)]
    data = bytes(master.get_commit_log_data(0) or b"")
    await master.shutdown()
    return master, slave, data, starts


async def test_a_torn_tail_waits_for_the_rest(tmp_path) -> None:
    _, slave, data, starts = await _stores(tmp_path)
    try:
        for cut in (starts[2] + 3, starts[2] + 20, starts[3] - 1, len(data)):  # mid-header, mid-body, whole
            slave.append_to_commit_log(slave.max_phy_offset, data[slave.max_phy_offset:cut])
            slave.dispatch_appended()
            assert slave.dispatcher.invalid_at == -1
        assert slave.dispatcher.reput_offset == len(data)
    finally:
        await slave.shutdown()


async def test_bytes_that_do_not_continue_the_log_stop_dispatch_there(tmp_path) -> None:
    _, slave, data, starts = await _stores(tmp_path)
    try:
        slave.append_to_commit_log(0, data[:starts[3]])
        slave.append_to_commit_log(starts[3], data[starts[1] + 50:])  # another layout's mid-message bytes
        slave.dispatch_appended()
        assert slave.dispatcher.invalid_at == starts[3] == slave.dispatcher.reput_offset
    finally:
        await slave.shutdown()


async def test_a_whole_entry_that_does_not_fit_its_file_is_not_a_torn_tail(tmp_path) -> None:
    _, slave, data, starts = await _stores(tmp_path)
    try:
        header = bytearray(data[starts[2]:starts[3]])
        header[:4] = (1 << 30).to_bytes(4, "big")  # a length past the file's end: no rest can ever come
        slave.append_to_commit_log(0, data[:starts[2]] + bytes(header))
        slave.dispatch_appended()
        assert slave.dispatcher.invalid_at == starts[2]
    finally:
        await slave.shutdown()
