"""The strategies that work on a :class:`~proof_orchestrator.lean.session.LeanSession`."""
