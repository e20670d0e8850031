"""People in the room: the agents connected over MCP, and their presence beside the humans."""
