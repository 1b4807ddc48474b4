"""Agents and models: the MCP server (:mod:`.mcp_server`) and the LLM providers (:mod:`.llm`).

Both sit above the core: they use the ledger, the provers' tools, the
verifier and the atomic writes exactly as ``orch fill`` does, and never
decide that a proof is correct themselves.
"""
