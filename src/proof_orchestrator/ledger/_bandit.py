"""The bandit's arms: what the scheduler learnt per (goal class, strategy), kept across runs."""

from __future__ import annotations

from sqlalchemy import Connection, select

from ..goals import ArmStats
from ._core import LedgerCore, retrying, upsert
from .models import BanditArm

__all__ = ["BanditArms", "write_arm"]


def write_arm(connection: Connection, goal_class: str, strategy: str, arm: ArmStats) -> None:
    """Store one arm (an upsert) in the transaction of ``connection``."""
    values = {
        "pulls": arm.pulls,
        "successes": arm.successes,
        "failures": arm.failures,
        "cpu_seconds": arm.cpu_seconds,
        "reward": arm.reward,
    }
    connection.execute(
        upsert(connection, BanditArm, ("goal_class", "strategy"), values).values(
            goal_class=goal_class, strategy=strategy, **values
        )
    )


class BanditArms(LedgerCore):
    """Loading and saving the bandit's arms."""

    @retrying
    def load_bandit(self) -> dict[tuple[str, str], ArmStats]:
        with self._session() as s:
            return {
                (row.goal_class, row.strategy): ArmStats(
                    row.pulls, row.successes, row.failures, row.cpu_seconds, row.reward
                )
                for row in s.scalars(select(BanditArm))
            }

    @retrying
    def save_arm(self, goal_class: str, strategy: str, arm: ArmStats) -> None:
        with self._transaction() as connection:
            write_arm(connection, goal_class, strategy, arm)
