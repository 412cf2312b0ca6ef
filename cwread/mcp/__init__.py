"""The MCP face: cwread's tools for an AI assistant over stdio (`cwread mcp`), beside the CLI.

`server` declares the tools, `books` holds the books open, `texts` words the results for an
assistant, `stdio` screens what arrives on stdin."""
