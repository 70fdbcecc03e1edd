"""Local multi-process clusters: presets, process supervision and health read through the admin API."""
