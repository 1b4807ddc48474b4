"""Language models as proposers of proofs (the ``llm`` strategy's outside seam).

* :mod:`.settings`: provider, model, key, sampling, prices, budget
  (``ORCH_LLM_*`` and the ``[llm]`` table of ``orch.toml``);
* :mod:`.providers`: OpenAI-compatible Chat Completions and Anthropic
  Messages through the official SDKs, with bounded retries (tenacity);
* :mod:`.client`: the response cache in the ledger, the USD budget and the
  concurrency limit of model calls.

The prompts and the parsing of replies are the prover's: Coq's are in
``coq/strategies/llm_prompt.py``. A model only proposes: every script it
writes goes through the script gate and the prover like any other candidate.
"""

from .client import LLMClient, Sample
from .providers import Completion, Provider, make_provider
from .settings import LLMSettings, llm_off_reason, load_llm_settings

__all__ = [
    "Completion",
    "LLMClient",
    "LLMSettings",
    "Provider",
    "Sample",
    "llm_off_reason",
    "load_llm_settings",
    "make_provider",
]
