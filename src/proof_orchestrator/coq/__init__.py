"""Coq: sentence syntax, the script gate, holes, ``_CoqProject``, coqtop, sessions,
proof states, the coqc verifier, and the strategies that work on a Coq session."""
