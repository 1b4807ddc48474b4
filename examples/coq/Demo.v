(* The README's quick start: two lemmas whose proofs are holes (Admitted.).
   `orch fill` finds both proofs by induction, checks them with coqc and
   writes them back. Compiles as it is with Coq 8.16: coqc Demo.v *)
Require Import List.
Import ListNotations.

Fixpoint double (n : nat) : nat :=
  match n with
  | 0 => 0
  | S m => S (S (double m))
  end.

Lemma double_add : forall n : nat, double n = n + n.
Proof.
Admitted.

Lemma app_nil_end' : forall (A : Type) (l : list A), l ++ [] = l.
Proof.
Admitted.
