"""The strategy seam: each strategy takes an open session, a goal and a budget.

The strategies themselves live with their prover: ``coq/strategies/`` and
``lean/strategies/``.
"""

from .base import Strategy, StrategyResult

__all__ = ["Strategy", "StrategyResult"]
