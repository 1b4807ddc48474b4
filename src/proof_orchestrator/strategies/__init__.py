"""Proof-search strategies: each takes an open session, a goal and a budget."""

from .base import Strategy, StrategyResult
from .micro import MicroStrategy

__all__ = ["MicroStrategy", "Strategy", "StrategyResult"]
