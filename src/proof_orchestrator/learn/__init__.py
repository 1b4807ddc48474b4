"""What a goal may learn from: finished proofs it can see, mined once per file version.

The backend decides what is visible at a hole (the proofs above it, the
project files its file imports, the libraries its session loads) and mines
them; this room keeps the examples (:mod:`.examples`), ranks them against a
goal, and caches what was mined across runs (:mod:`.cache`).
"""

from .cache import ProofCache, default_cache_folder, file_digest
from .examples import Corpus, ProofExample

__all__ = ["Corpus", "ProofCache", "ProofExample", "default_cache_folder", "file_digest"]
