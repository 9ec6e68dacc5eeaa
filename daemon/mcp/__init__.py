"""`accelopt mcp`: accelopt's judge, ledger and memory as Model Context Protocol tools for
outside coding agents (docs/agents.md).

Rooms: errors.py (the typed refusals every tool answers with), models.py (the tools' typed
outputs), budget.py (each client's device-seconds per hour), route.py (where an agent's jobs
run: the daemon's queue, or this process's own devices), desk.py (what each tool does, over the
projections, the harness and the job queue), server.py (the MCP server on the official SDK:
tools, the client's identity, stdio and Streamable HTTP behind the live pages' token rule).
"""
