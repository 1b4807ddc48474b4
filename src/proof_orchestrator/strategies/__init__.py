"""Proof-search strategies: each takes an open session, a goal and a budget."""

from .base import Strategy, StrategyResult
from .micro import CachedStrategy, InductionStrategy, MicroStrategy

__all__ = ["CachedStrategy", "InductionStrategy", "MicroStrategy", "Strategy", "StrategyResult"]
