"""What a goal may learn from: finished proofs it can see, mined once per file version.

The backend decides what is visible at a hole (the proofs above it, the
project files its file imports, the libraries its session loads) and mines
them; this room keeps the examples (:mod:`.examples`), ranks them against a
goal, caches what was mined across runs (:mod:`.cache`), and holds the proofs a
run finds so that the goals that see them learn from them at once (:mod:`.found`).
"""

from .cache import ProofCache, default_cache_folder, file_digest
from .examples import Corpus, ProofExample, statement_features
from .found import FOUND, FoundProofs
from .stats import MINING, MiningStats

__all__ = [
    "FOUND",
    "MINING",
    "Corpus",
    "FoundProofs",
    "MiningStats",
    "ProofCache",
    "ProofExample",
    "default_cache_folder",
    "file_digest",
    "statement_features",
]
