"""Adapters that bring memtrial to where agents already keep their memories and run their loops.

Each is an optional extra and talks to the service through :mod:`service.client`:
:mod:`service.integrations.mem0` (``[mem0]``) credits a Mem0 store's memories and writes their
measured values back into it; :mod:`service.integrations.langgraph` (``[langgraph]``) is the decision
loop as a LangGraph graph, one model call per designed subset.
"""
