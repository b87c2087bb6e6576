"""LangGraph integration: CogitoStore, a LangGraph ``BaseStore`` over a MemoryStore.

Needs the ``langgraph`` extra (``pip install "cogito-lc[langgraph]"``).
"""

from cogito_lc.langgraph.store import CogitoStore

__all__ = ["CogitoStore"]
