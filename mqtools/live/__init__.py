"""What a live view of a cluster polls and shows, below any user interface.

`mq top` (Textual) and `mq top --once` (plain text and JSON) share this: the jobs one refresh round
runs through MQAdmin (`collect`), the state their outcomes build up with the short histories rates
need (`state`), the rows of each view with threshold levels (`tables`), and the documents a
snapshot is saved as (`export`). Every figure comes from `mqtools.client.admin`; what is computed
here is only ages and rates.
"""
