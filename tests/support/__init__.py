"""Helpers the tests share: processes, clusters, ports, goldens (see tests/README.md)."""
