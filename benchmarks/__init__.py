"""Benchmarks: every scenario of issue 5 against its floor measured in the same run.

``python -m benchmarks`` (``--quick``, ``--json FILE``) starts its own ``jupyter server`` on loopback
with collaboration and this extension, drives it with the official MCP SDK client over HTTP, and
prints one table: scenario, p50, p95, floor, distance to the floor, target, met.
"""
