"""What tests and benchmarks share: server processes, the Yjs client, MCP clients, the browser."""
