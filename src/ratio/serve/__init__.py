"""Search for people and agents: ``engine`` (one search path over a served pool, per move the
model ``auto`` chose), ``pool`` (the served collection's file and arrays), ``trained`` (which
local or shipped model answers each move), ``app`` (the page and the HTTP API) and
``mcp_server`` (the MCP tools)."""
