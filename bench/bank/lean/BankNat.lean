/-! Benchmark bank: natural numbers. Every proof is a hole; ids match BankNat.v.
Core Lean only (no Mathlib). -/

def double : Nat → Nat
  | 0 => 0
  | n + 1 => double n + 2

def sum_to : Nat → Nat
  | 0 => 0
  | n + 1 => (n + 1) + sum_to n

def pow2 : Nat → Nat
  | 0 => 1
  | n + 1 => 2 * pow2 n

def evenb : Nat → Bool
  | 0 => true
  | 1 => false
  | n + 2 => evenb n

theorem nat_add_0_l : ∀ n : Nat, 0 + n = n := by sorry

theorem nat_add_0_r : ∀ n : Nat, n + 0 = n := by sorry

theorem nat_succ_neq_zero : ∀ n : Nat, n + 1 ≠ 0 := by sorry

theorem nat_add_comm : ∀ n m : Nat, n + m = m + n := by sorry

theorem nat_add_assoc : ∀ n m p : Nat, n + (m + p) = n + m + p := by sorry

theorem nat_mul_1_r : ∀ n : Nat, n * 1 = n := by sorry

theorem nat_mul_0_r : ∀ n : Nat, n * 0 = 0 := by sorry

theorem nat_le_refl : ∀ n : Nat, n ≤ n := by sorry

theorem nat_lt_succ : ∀ n : Nat, n < n + 1 := by sorry

theorem nat_le_add_r : ∀ n m : Nat, n ≤ n + m := by sorry

theorem nat_succ_inj : ∀ n m : Nat, n + 1 = m + 1 → n = m := by sorry

theorem nat_lin_ineq : ∀ a b : Nat, a < b → 2 * a + 1 < 2 * b + 2 := by sorry

theorem nat_max_comm : ∀ n m : Nat, max n m = max m n := by sorry

theorem nat_min_le_l : ∀ n m : Nat, min n m ≤ n := by sorry

theorem nat_sub_diag : ∀ n : Nat, n - n = 0 := by sorry

theorem nat_double_plus : ∀ n : Nat, n + n = 2 * n := by sorry

theorem nat_pred_succ : ∀ n : Nat, Nat.pred (n + 1) = n := by sorry

theorem nat_lt_irrefl : ∀ n : Nat, ¬ n < n := by sorry

theorem nat_add_cancel_l : ∀ n m p : Nat, p + n = p + m → n = m := by sorry

theorem nat_sub_add : ∀ n m : Nat, m ≤ n → n - m + m = n := by sorry

theorem nat_le_trans3 : ∀ a b c d : Nat, a ≤ b → b ≤ c → c ≤ d → a ≤ d := by sorry

theorem nat_sub_le : ∀ n m : Nat, n - m ≤ n := by sorry

theorem nat_mul_comm : ∀ n m : Nat, n * m = m * n := by sorry

theorem nat_mul_distr : ∀ a b c : Nat, a * (b + c) = a * b + a * c := by sorry

theorem nat_max_idem : ∀ n : Nat, max n n = n := by sorry

theorem nat_evenb_SS : ∀ n : Nat, evenb (n + 2) = evenb n := by sorry

theorem nat_zero_or_succ : ∀ n : Nat, n = 0 ∨ ∃ m, n = m + 1 := by sorry

theorem nat_eqb_refl : ∀ n : Nat, Nat.beq n n = true := by sorry

theorem nat_double_eq : ∀ n : Nat, double n = 2 * n := by sorry

theorem nat_double_add : ∀ n m : Nat, double (n + m) = double n + double m := by sorry

theorem nat_evenb_double : ∀ n : Nat, evenb (double n) = true := by sorry

theorem nat_pow2_pos : ∀ n : Nat, 0 < pow2 n := by sorry

theorem nat_le_double : ∀ n : Nat, n ≤ double n := by sorry

theorem nat_sum_to_mono : ∀ n : Nat, sum_to n ≤ sum_to (n + 1) := by sorry

theorem nat_sum_to_ge : ∀ n : Nat, n ≤ sum_to n := by sorry

theorem nat_evenb_or : ∀ n : Nat, evenb n = true ∨ evenb (n + 1) = true := by sorry

theorem nat_sum_to_formula : ∀ n : Nat, 2 * sum_to n = n * (n + 1) := by sorry

theorem nat_pow2_double : ∀ n : Nat, pow2 (n + 1) = double (pow2 n) := by sorry

theorem nat_eqb_eq : ∀ n m : Nat, Nat.beq n m = true → n = m := by sorry

theorem nat_double_inj : ∀ n m : Nat, double n = double m → n = m := by sorry

theorem nat_mul_le_compat : ∀ a b c d : Nat, a ≤ b → c ≤ d → a * c ≤ b * d := by sorry

theorem nat_sq_ge : ∀ n : Nat, n ≤ n * n := by sorry
