"""Failover drills: load against a cluster, a real fault, a history of every operation, a checked verdict.

`scenarios` says what each drill does to the cluster, `load` drives producers and consumers at a
constant rate, `history` records every operation (the shape OpenChaos and Jepsen checkers read),
`checkers` and `timeline` judge a history, `report` puts the figures and the verdict together, and
`runner` runs one drill end to end. A saved history is checked offline by the same code.
"""
