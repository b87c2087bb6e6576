"""Taking the terms of forgotten memories out of the vocabulary maps built from them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from cogito_lc.memory._vocab_file import VOCAB_FILE, load_vocab_map, save_vocab_map
from cogito_lc.memory._vocab_terms import terms_in_corpus

if TYPE_CHECKING:
    from cogito_lc.memory.scope import Scope
    from cogito_lc.memory.state import StateStore

__all__ = ["VocabPurge"]

logger = logging.getLogger(__name__)

VocabMap = dict[str, list[str]]


class VocabPurge:
    """What one forget takes out of vocabulary maps: the terms its memories alone held.

    A term of a map is stale when it occurs in a forgotten memory's text (in any
    term of a map when the texts are unknown, as for a deleted scope) and in none
    of the memories left in the map's scope. ``remaining`` gives those memories'
    texts, a page at a time; each scope is read once for every term looked for.

    Args:
        forgotten: The forgotten memories' texts; None when they are not known.
        remaining: The texts left in a scope, a page at a time.
    """

    def __init__(
        self,
        forgotten: Sequence[str] | None,
        remaining: Callable[[Scope], Iterable[str]],
    ) -> None:
        self._forgotten = None if forgotten is None else "\n".join(forgotten)
        self._remaining = remaining
        self._looked_for: dict[Scope, set[str]] = {}
        self._found: dict[Scope, set[str]] = {}
        self.changed: list[tuple[VocabMap, VocabMap | None]] = []
        """Each map changed (as it was, as it is now: None when no term is left)."""

    def purged(self, vocab_map: VocabMap, scope: Scope) -> VocabMap | None:
        """``vocab_map`` without its stale terms in ``scope``; None when no term is left."""
        terms = {term for held in vocab_map.values() for term in held}
        if self._forgotten is not None:
            terms = terms_in_corpus(terms, self._forgotten)
        stale = terms - self._still_held(terms, scope)
        kept = {
            phrase: [term for term in held if term not in stale]
            for phrase, held in vocab_map.items()
        }
        return {phrase: held for phrase, held in kept.items() if held} or None

    def purge_saved(self, state: StateStore, scope: Scope) -> None:
        """Take the stale terms out of the map saved in ``state``, calibrated in ``scope``."""
        saved = load_vocab_map(state)
        if not saved:
            return
        purged = self.purged(saved, scope)
        if purged == saved:
            return
        if purged is None:
            state.delete([VOCAB_FILE])
        else:
            save_vocab_map(state, purged)
        self.changed.append((saved, purged))
        logger.info(
            "took %d terms of forgotten memories out of the vocabulary map %s",
            _count(saved) - _count(purged or {}),
            state.location(VOCAB_FILE),
        )

    def in_use(self, vocab_map: VocabMap, scope: Scope) -> VocabMap | None:
        """The map to recall with instead of ``vocab_map``, which a store of ``scope`` uses.

        Without its stale terms; when the forgotten texts are not known, the purged
        map when ``vocab_map`` is a saved map this purge changed, else ``vocab_map``.
        """
        if self._forgotten is not None:
            return self.purged(vocab_map, scope)
        for saved, purged in self.changed:
            if vocab_map == saved:
                return purged
        return vocab_map

    def _still_held(self, terms: set[str], scope: Scope) -> set[str]:
        looked_for = self._looked_for.setdefault(scope, set())
        found = self._found.setdefault(scope, set())
        wanted = terms - looked_for
        looked_for |= wanted
        for text in self._remaining(scope) if wanted else ():
            found |= terms_in_corpus(wanted - found, text)
            if wanted <= found:
                break
        return terms & found


def _count(vocab_map: VocabMap) -> int:
    return sum(len(terms) for terms in vocab_map.values())
