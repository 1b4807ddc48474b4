"""``python -m proof_orchestrator.cli``: the same as the ``orch`` command."""

from . import main

main()
