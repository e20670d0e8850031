"""The panel's side of the server: REST routes under <base_url>/api/mcp/ and activity events."""
