"""Exceptions raised by concept_index.

BrtException (memory_store.errors)
└── ConceptIndexError
    └── CycleRefused     an edge that would make the concept graph cyclic (also a ValueError)

memory_store errors (reading the store the index is built from) pass through unchanged.
"""

from memory_store.errors import BrtException


class ConceptIndexError(BrtException):
    """Base class of every concept_index error."""


class CycleRefused(ConceptIndexError, ValueError):
    """An edge that would make the concept graph cyclic."""
