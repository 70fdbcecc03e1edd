"""A message's timer or delay level applied at its put (Apache's HookUtils.handleScheduleMessage), for the send
path and for the message END_TRANSACTION puts on its real topic.

Apache runs that hook on every put of a single message whose transaction type is "not a transaction" or
"commit": a half message (prepared) is stored as it came, and a committed transactional message is timed at
its commit. So TIMER_DELAY_SEC / TIMER_DELAY_MS are due that long after the put (or the commit),
TIMER_DELIVER_MS at that time (at once when it has passed), and a delay level counts from the put; a timer
value that is not legal refuses the put (for a commit, the half message stays and the check service asks
again). A batch is never timed: mq's batch path does not call this. (Apache's hook does see a batch, by its
header's properties only; a timer there would send the whole batch to the wheel, but 5.x's batch encoder writes
no header property into the messages, so they would reach the wheel without their real topic or due time.)
"""

from __future__ import annotations

from mqtools.common import properties as P
from mqtools.common.message import MessageExtBrokerInner
from mqtools.remoting.codes import ResponseCode
from mqtools.server.broker.context import BrokerContext
from mqtools.server.store.timer import timer_logic as timer


def handle_schedule(c: BrokerContext, msg: MessageExtBrokerInner) -> tuple[int, str] | None:
    """Point `msg` at the timer wheel or the schedule topic when it asks for it; (code, remark) when the put
    must be refused instead, None when it may go ahead."""
    if not msg.properties.keys().isdisjoint(timer.REQUEST_KEYS):
        cfg = c.store.config
        service = getattr(c, "timer", None)
        settings = timer.timer_settings(cfg.timer_wheel_enable, cfg.timer_precision_ms, cfg.timer_max_delay_sec)
        outcome = timer.redirect_to_timer(msg, int(c.clock() * 1000), settings,
                                          service.is_reject if service is not None else None)
        if outcome is timer.Rewrite.WHEEL_TIMER_MSG_ILLEGAL:
            return ResponseCode.MESSAGE_ILLEGAL, (
                "timer message illegal, the delay time should not be bigger than the max delay "
                f"{cfg.timer_max_delay_sec * 1000}ms; or if set del msg, the delay time should be bigger than "
                "the current time")
        if outcome is timer.Rewrite.WHEEL_TIMER_NOT_ENABLE:
            return ResponseCode.SYSTEM_ERROR, ("accurate timer message is not enabled, timerWheelEnable is "
                                               f"{str(cfg.timer_wheel_enable).lower()}")
        if outcome is timer.Rewrite.WHEEL_TIMER_FLOW_CONTROL:
            limit = cfg.timer_congest_num_each_slot
            return ResponseCode.SYSTEM_ERROR, (
                f"timer message is under flow control, max num limit is {limit * 2} or the current value is "
                f"greater than {limit} and less than {limit * 2}, trigger random flow control")
    if P.DELAY in msg.properties:
        c.schedule.redirect(msg)
    return None
