"""Where agents meet codemem: the MCP server and the Claude Code hook.

Each module is an edge over `codemem.memory.Memory`, as `api/` is for HTTP; the core knows
nothing of MCP or of any agent's hook protocol.
"""
