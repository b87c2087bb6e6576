"""Embeddings built on first use, so a process that never embeds never loads a model."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from langchain_core.embeddings import Embeddings

__all__ = ["LazyEmbeddings"]

_OWN = frozenset({"_factory", "_lock", "_loaded"})
_PROBED_ON_OPEN = frozenset({"embed_query_inline", "embed_query_inline_template"})
"""Optional methods langchain-postgres looks for (``hasattr``) when a store opens and before
each search or write: absent until the embeddings are built, so that opening a store does
not build them (a model that has them is used without them until then)."""


class LazyEmbeddings(Embeddings):
    """An ``Embeddings`` that builds the real one (``factory()``) on its first use.

    Loading a local model takes seconds (torch, weights); a command that only
    counts, lists or deletes memories needs none of it. The first embedding call,
    or the first read of any other attribute (``model_name``, ``_client``; not the
    optional ``embed_query_inline`` methods langchain-postgres looks for when a
    store opens), builds the embeddings once, whichever thread asks first; every
    later call goes to them. A factory that raises is called again on the next use.
    A store opened over an existing collection checks the model's dimension there
    on its first use, through :meth:`checked`.

    Args:
        factory: Builds the embeddings; called once (again only after it raised).

    Example:
        ```python
        from langchain_core.embeddings import DeterministicFakeEmbedding

        from cogito_lc.embeddings import LazyEmbeddings

        embeddings = LazyEmbeddings(lambda: DeterministicFakeEmbedding(size=8))
        assert not embeddings.loaded
        assert len(embeddings.embed_query("hello")) == 8
        assert embeddings.loaded
        ```
    """

    def __init__(self, factory: Callable[[], Embeddings]) -> None:
        if not callable(factory):
            msg = (
                f"factory must be a function returning Embeddings, got {type(factory).__name__}; "
                "pass e.g. `LazyEmbeddings(local_embeddings)`."
            )
            raise TypeError(msg)
        self._factory = factory
        self._lock = threading.Lock()
        self._loaded: Embeddings | None = None

    @property
    def loaded(self) -> bool:
        """Whether the embeddings have been built."""
        return self._loaded is not None

    @property
    def embeddings(self) -> Embeddings:
        """The real embeddings, built now if they were not yet."""
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._factory()
            return self._loaded

    def checked(self, check: Callable[[Embeddings], None]) -> LazyEmbeddings:
        """These embeddings, given out only once ``check`` has passed on the built model.

        For a store opened over stored vectors: the model, built once for every
        store sharing these embeddings, must pass that store's check before the
        store uses it. A check that raises fails that use, and the next use checks
        again: only the store given the returned object refuses a model that does not
        fit it, and a check that failed on a passing fault (a remote model not
        answering yet) passes once it is gone.

        Example:
            ```python
            from langchain_core.embeddings import DeterministicFakeEmbedding

            from cogito_lc.embeddings import LazyEmbeddings


            def sixteen(model):
                if len(model.embed_query("probe")) != 16:
                    raise ValueError("the collection holds vectors of size 16")


            shared = LazyEmbeddings(lambda: DeterministicFakeEmbedding(size=8))
            misfit = shared.checked(sixteen)
            assert len(shared.embed_query("hello")) == 8  # unaffected
            try:
                misfit.embed_query("hello")
            except ValueError as error:
                assert "size 16" in str(error)
            ```
        """
        return LazyEmbeddings(partial(_built_and_checked, self, check))

    async def aload(self) -> Embeddings:
        """:attr:`embeddings`, built in a worker thread so the event loop keeps running."""
        if self._loaded is not None:
            return self._loaded
        return await asyncio.get_running_loop().run_in_executor(None, lambda: self.embeddings)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts`` with the built embeddings."""
        return self.embeddings.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """Embed ``text`` with the built embeddings."""
        return self.embeddings.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents`."""
        return await (await self.aload()).aembed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query`."""
        return await (await self.aload()).aembed_query(text)

    def __getattr__(self, name: str) -> Any:
        if name in _OWN or name.startswith("__") or (name in _PROBED_ON_OPEN and not self.loaded):
            raise AttributeError(name)
        return getattr(self.embeddings, name)

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy builds its own on its first use (and checks it, if it was made by
        # :meth:`checked`): a built model is not copied.
        return (LazyEmbeddings, (self._factory,))

    def __repr__(self) -> str:
        state = repr(self._loaded) if self._loaded is not None else "not loaded"
        return f"LazyEmbeddings({state})"


def _built_and_checked(lazy: LazyEmbeddings, check: Callable[[Embeddings], None]) -> Embeddings:
    model = lazy.embeddings
    check(model)
    return model
