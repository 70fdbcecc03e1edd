"""RocketMQ 5's gRPC API (apache/rocketmq-apis, package `apache.rocketmq.v2`): the .proto files and their generated
modules (`generate.py`, `make protos`). Below every role that speaks it: the proxy serves it, the toolkit's gRPC
clients (the kill-proxy drill's load) call it."""
