"""RocketMQ 5's POP consumption inside the broker (RIP-19): the revive topic's records (records.py), the
revive decisions (ledger.py) and their service (revive.py), the FIFO hold table (order.py), and what the
POP processors share (state.py). The wire formats are in mqtools.remoting.pop; the processors in
processors/pop.py, pop_peek.py, ack.py and change_invisible.py."""
