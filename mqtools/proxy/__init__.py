"""`mq proxy`: RocketMQ 5's gRPC proxy (apache.rocketmq.v2.MessagingService) in cluster mode.

The 5.x clients (Java, Python, Go, ...) speak gRPC to a proxy; the proxy speaks remoting to the name servers and
brokers, as a client does (mqtools.client's gateway), and turns each gRPC call into the remoting requests Apache's
proxy sends for it: SEND_MESSAGE_V2, END_TRANSACTION, POP_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME,
CONSUMER_SEND_MSG_BACK, heartbeats; and it relays the brokers' CHECK_TRANSACTION_STATE to a producer's
telemetry stream. Modules: config (rmq-proxy.json), errors (status codes), convert (messages both ways), route
(QueryRoute/QueryAssignment answers), settings (Telemetry's settings answer), metadata (topic types, group
policies), receipt (receipt handles), renewal (auto-renewed handles of push consumers), clients (connected gRPC
clients and their streams), sending and popping (the remoting side), service (the gRPC methods), server
(grpc.aio, raw bytes in, so bad input gets a status, never a traceback). protos/ holds Apache's .proto files and
the modules generated from them (`make protos`).
"""
