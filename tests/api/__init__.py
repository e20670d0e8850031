"""Tests of ``jupyter_mcp_ext.api``."""
