(* Benchmark bank: natural numbers. Every proof is a hole; ids match BankNat.lean. *)
From Coq Require Import Arith Lia.

Fixpoint double (n : nat) : nat :=
  match n with
  | 0 => 0
  | S k => S (S (double k))
  end.

Fixpoint sum_to (n : nat) : nat :=
  match n with
  | 0 => 0
  | S k => S k + sum_to k
  end.

Fixpoint pow2 (n : nat) : nat :=
  match n with
  | 0 => 1
  | S k => 2 * pow2 k
  end.

Fixpoint evenb (n : nat) : bool :=
  match n with
  | 0 => true
  | 1 => false
  | S (S k) => evenb k
  end.

Lemma nat_add_0_l : forall n : nat, 0 + n = n.
Admitted.

Lemma nat_add_0_r : forall n : nat, n + 0 = n.
Admitted.

Lemma nat_succ_neq_zero : forall n : nat, S n <> 0.
Admitted.

Lemma nat_add_comm : forall n m : nat, n + m = m + n.
Admitted.

Lemma nat_add_assoc : forall n m p : nat, n + (m + p) = n + m + p.
Admitted.

Lemma nat_mul_1_r : forall n : nat, n * 1 = n.
Admitted.

Lemma nat_mul_0_r : forall n : nat, n * 0 = 0.
Admitted.

Lemma nat_le_refl : forall n : nat, n <= n.
Admitted.

Lemma nat_lt_succ : forall n : nat, n < S n.
Admitted.

Lemma nat_le_add_r : forall n m : nat, n <= n + m.
Admitted.

Lemma nat_succ_inj : forall n m : nat, S n = S m -> n = m.
Admitted.

Lemma nat_lin_ineq : forall a b : nat, a < b -> 2 * a + 1 < 2 * b + 2.
Admitted.

Lemma nat_max_comm : forall n m : nat, Nat.max n m = Nat.max m n.
Admitted.

Lemma nat_min_le_l : forall n m : nat, Nat.min n m <= n.
Admitted.

Lemma nat_sub_diag : forall n : nat, n - n = 0.
Admitted.

Lemma nat_double_plus : forall n : nat, n + n = 2 * n.
Admitted.

Lemma nat_pred_succ : forall n : nat, Nat.pred (S n) = n.
Admitted.

Lemma nat_lt_irrefl : forall n : nat, ~ n < n.
Admitted.

Lemma nat_add_cancel_l : forall n m p : nat, p + n = p + m -> n = m.
Admitted.

Lemma nat_sub_add : forall n m : nat, m <= n -> n - m + m = n.
Admitted.

Lemma nat_le_trans3 : forall a b c d : nat, a <= b -> b <= c -> c <= d -> a <= d.
Admitted.

Lemma nat_sub_le : forall n m : nat, n - m <= n.
Admitted.

Lemma nat_mul_comm : forall n m : nat, n * m = m * n.
Admitted.

Lemma nat_mul_distr : forall a b c : nat, a * (b + c) = a * b + a * c.
Admitted.

Lemma nat_max_idem : forall n : nat, Nat.max n n = n.
Admitted.

Lemma nat_evenb_SS : forall n : nat, evenb (S (S n)) = evenb n.
Admitted.

Lemma nat_zero_or_succ : forall n : nat, n = 0 \/ exists m, n = S m.
Admitted.

Lemma nat_eqb_refl : forall n : nat, Nat.eqb n n = true.
Admitted.

Lemma nat_double_eq : forall n : nat, double n = 2 * n.
Admitted.

Lemma nat_double_add : forall n m : nat, double (n + m) = double n + double m.
Admitted.

Lemma nat_evenb_double : forall n : nat, evenb (double n) = true.
Admitted.

Lemma nat_pow2_pos : forall n : nat, 0 < pow2 n.
Admitted.

Lemma nat_le_double : forall n : nat, n <= double n.
Admitted.

Lemma nat_sum_to_mono : forall n : nat, sum_to n <= sum_to (S n).
Admitted.

Lemma nat_sum_to_ge : forall n : nat, n <= sum_to n.
Admitted.

Lemma nat_evenb_or : forall n : nat, evenb n = true \/ evenb (S n) = true.
Admitted.

Lemma nat_sum_to_formula : forall n : nat, 2 * sum_to n = n * (n + 1).
Admitted.

Lemma nat_pow2_double : forall n : nat, pow2 (S n) = double (pow2 n).
Admitted.

Lemma nat_eqb_eq : forall n m : nat, Nat.eqb n m = true -> n = m.
Admitted.

Lemma nat_double_inj : forall n m : nat, double n = double m -> n = m.
Admitted.

Lemma nat_mul_le_compat : forall a b c d : nat, a <= b -> c <= d -> a * c <= b * d.
Admitted.

Lemma nat_sq_ge : forall n : nat, n <= n * n.
Admitted.
