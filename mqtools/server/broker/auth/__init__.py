"""ACL 2.0 (RocketMQ 5.3+'s auth module): users, ACL rules, the signature check and the decisions.

One concept per module: `model` (users, resources, policies, as Apache's auth model has them),
`signature` and `policy` (the sans-IO checks), `store` (the local metadata on disk), `manager`
(the metadata rules and remarks of Apache's metadata managers), `contexts` (what a request asks
for), `config` (the broker properties that switch it on) and `service` (the request hook and the
AUTH_* admin requests). ACL 1.0 (`mqtools.server.broker.acl`) stays beside it.
"""
