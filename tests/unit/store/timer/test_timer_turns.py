"""A timer tick holding many messages lets the loop turn while it delivers them: a put under ASYNC_FLUSH never
suspends, so 100,000 messages due in one second held every request of the broker for 1.8 s."""

from __future__ import annotations

from pathlib import Path

from support.loopturns import loop_turns
from unit.store.store_helpers import inner, tiny_config
from unit.store.timer.test_timer_service import SETTINGS, T0, Clock

from mqtools.common.loop import PUTS_PER_TURN
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.timer import timer_logic as L
from mqtools.server.store.timer.timer_message_store import TimerMessageStore

MESSAGES = 320


async def test_a_tick_of_many_messages_lets_the_loop_turn(tmp_path: Path) -> None:
    clock = Clock()
    cfg = tiny_config(tmp_path, mapped_file_size_commit_log=4 << 20, mapped_file_size_timer_log=1 << 20)
    store = MessageStore(cfg, clock=clock)
    await store.start()
    timer = TimerMessageStore(store, cfg, clock=clock, slots_total=3600)
    try:
        timer.load()
        timer.dequeue_running = True
        timer.maybe_move_write_time()
        for _ in range(MESSAGES):
            msg = inner(topic="Orders", body=b"x", queue_id=0, TIMER_DELIVER_MS=str(T0 + 5500))
            assert L.rewrite_for_timer(msg, clock.ms, SETTINGS) is L.Rewrite.REWRITTEN
            assert (await store.put_message(msg)).ok
        while await timer.enqueue_once():
            pass
        clock.ms = T0 + 6000
        async with loop_turns() as turns:
            while await timer.dequeue_once() != -1:
                pass
        assert store.get_max_offset_in_queue("Orders", 0) == MESSAGES
        assert turns.count >= MESSAGES // PUTS_PER_TURN
    finally:
        timer.log.close()
        await store.shutdown()
