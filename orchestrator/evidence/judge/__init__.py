"""The judgements of a finished synthesis, part of the evidence stage: acceptance verdicts (``acceptance``, with
``relevance``: the names a criterion asks about), quantities stated by the sources (``quantities``), conflicts and
agreements between them (``conflicts``, and ``counter``: the other pages of the store that state a block's
quantity), and ``synthesis``, which runs them over a result."""

from .acceptance import Verdict, judge_acceptance
from .conflicts import Agreement, Conflict, find_conflicts

__all__ = ["Agreement", "Conflict", "Verdict", "find_conflicts", "judge_acceptance"]
