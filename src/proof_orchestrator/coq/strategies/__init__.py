"""The strategies that work on a :class:`~proof_orchestrator.coq.session.CoqSession`."""
