"""Scheduling: which strategy first (bandit), how much CPU (governor), in what order (queue)."""

from .bandit import ArmStats, Bandit, goal_class
from .governor import CpuGovernor, CpuSample, trace_summary

__all__ = ["ArmStats", "Bandit", "CpuGovernor", "CpuSample", "goal_class", "trace_summary"]
