"""Lean 4: the script gate, holes, the REPL, sessions and the verifier, ``orch lean
setup``, and the strategies that work on a Lean session."""
