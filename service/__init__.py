"""The memtrial REST service (FastAPI, SQLAlchemy 2, Alembic): agents, experiences, decisions.

It depends on the core library :mod:`memtrial`; the core never imports it.
"""
