/-! The README's Lean quick start: two theorems whose proofs are holes (`sorry`).
`orch fill` looks for proofs with the Lean REPL, checks the whole file with
`lake env lean --json` and writes them back. Core Lean only. -/

theorem add_comm_demo (a b : Nat) : a + b = b + a := by
  sorry

theorem and_swap_demo (p q : Prop) (h : p ∧ q) : q ∧ p := by
  sorry
