"""ACL 2.0 (RocketMQ 5.3+'s auth module) in the broker: users, ACL rules, the signature check and the decisions.

The model and the sans-IO checks (users, resources, policies; the signature; authentication and
authorization) are `mqtools.common.auth`, which the gRPC proxy decides with too. Here: `store` (the local
metadata on disk), `manager` (the metadata rules and remarks of Apache's metadata managers), `contexts` (what
a request asks for), `config` (the broker properties that switch it on) and `service` (the request hook and
the AUTH_* admin requests). ACL 1.0 (`mqtools.server.broker.acl`) stays beside it.
"""
