"""Typed results of the admin API: what `mq admin`, `mq top` and drills show, and nothing raw.

The wire bodies (`mqtools.remoting.bodies`) are RocketMQ's shapes; these models are the toolkit's.
Each one is built by a `from_*` parser from the server's answer, in one place. A figure the server
did not give (a key missing from runtime info, a private request Apache RocketMQ does not answer, a
broker that timed out) is None, never 0 or -1, so views can print `n/a` and JSON `null`.


One module per area: `brokers`, `ha`, `groups` (with `connections`: who is connected), `topics`, `messages`, `live`, `acl`; `parse` holds the
helpers they share."""
