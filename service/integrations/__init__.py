"""Adapters that bring memtrial to where agents already keep their memories and run their loops.

Each is an optional extra and talks to the service through :mod:`service.client`:
:mod:`service.integrations.mem0` (``[mem0]``) credits a Mem0 store's memories, ranks Mem0's hits by
what memtrial measured, and writes their values and quarantine status back into it;
:mod:`service.integrations.langgraph` (``[langgraph]``) is the decision loop as a LangGraph graph, one
model call per designed subset, with a node that ranks your own store's candidates.
"""
