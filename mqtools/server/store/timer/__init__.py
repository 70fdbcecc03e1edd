"""Timer messages (RIP-43): the TimerLog, the TimerWheel, their checkpoint and metrics, and the
service that files messages of ``rmq_sys_wheel_timer`` and writes them back to their topics when due.
The files are Apache RocketMQ 5's, byte for byte, so a store moves between the two brokers."""
