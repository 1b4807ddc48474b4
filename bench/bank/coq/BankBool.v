(* Benchmark bank: booleans. Every proof is a hole; ids match BankBool.lean.
   This file does not load Lia: quick tactics must not rely on it here. *)
From Coq Require Import Bool.

Fixpoint count_true (l : list bool) : nat :=
  match l with
  | nil => 0
  | cons b t => (if b then 1 else 0) + count_true t
  end.

Lemma bool_negb_involutive : forall b : bool, negb (negb b) = b.
Admitted.

Lemma bool_andb_true_l : forall b : bool, andb true b = b.
Admitted.

Lemma bool_andb_false_r : forall b : bool, andb b false = false.
Admitted.

Lemma bool_orb_true_r : forall b : bool, orb b true = true.
Admitted.

Lemma bool_andb_comm : forall a b : bool, andb a b = andb b a.
Admitted.

Lemma bool_orb_comm : forall a b : bool, orb a b = orb b a.
Admitted.

Lemma bool_andb_assoc : forall a b c : bool, andb a (andb b c) = andb (andb a b) c.
Admitted.

Lemma bool_orb_assoc : forall a b c : bool, orb a (orb b c) = orb (orb a b) c.
Admitted.

Lemma bool_negb_andb : forall a b : bool, negb (andb a b) = orb (negb a) (negb b).
Admitted.

Lemma bool_negb_orb : forall a b : bool, negb (orb a b) = andb (negb a) (negb b).
Admitted.

Lemma bool_andb_orb_distrib : forall a b c : bool, andb a (orb b c) = orb (andb a b) (andb a c).
Admitted.

Lemma bool_xorb_self : forall b : bool, xorb b b = false.
Admitted.

Lemma bool_andb_negb_r : forall b : bool, andb b (negb b) = false.
Admitted.

Lemma bool_orb_negb_r : forall b : bool, orb b (negb b) = true.
Admitted.

Lemma bool_if_same : forall (b : bool) (x : nat), (if b then x else x) = x.
Admitted.

Lemma bool_negb_if : forall (b : bool) (x y : nat),
  (if negb b then x else y) = (if b then y else x).
Admitted.

Lemma bool_implb_true_r : forall a : bool, implb a true = true.
Admitted.

Lemma bool_eqb_refl : forall b : bool, Bool.eqb b b = true.
Admitted.

Lemma bool_andb_true_elim : forall a b : bool, andb a b = true -> a = true /\ b = true.
Admitted.

Lemma bool_orb_false_elim : forall a b : bool, orb a b = false -> a = false /\ b = false.
Admitted.

Lemma bool_negb_inj : forall a b : bool, negb a = negb b -> a = b.
Admitted.

Lemma bool_eqb_eq : forall a b : bool, Bool.eqb a b = true -> a = b.
Admitted.

Lemma bool_xorb_negb : forall a b : bool, negb (xorb a (negb b)) = xorb a b.
Admitted.

Lemma bool_if_andb : forall (a b : bool) (x y : nat),
  (if andb a b then x else y) = (if a then (if b then x else y) else y).
Admitted.

Lemma bool_count_true_app : forall l1 l2 : list bool,
  count_true (app l1 l2) = count_true l1 + count_true l2.
Admitted.

Lemma bool_count_true_le : forall l : list bool, count_true l <= length l.
Admitted.

Lemma bool_nat_eqb_sym : forall n m : nat, Nat.eqb n m = Nat.eqb m n.
Admitted.
