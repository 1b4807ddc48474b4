(* Benchmark bank: lists. Every proof is a hole; ids match BankList.lean.
   The polymorphic lemmas live in a Section, as in real developments. *)
From Coq Require Import List Lia.
Import ListNotations.

Fixpoint sum_list (l : list nat) : nat :=
  match l with
  | [] => 0
  | x :: t => x + sum_list t
  end.

Fixpoint rev_acc {A : Type} (l acc : list A) : list A :=
  match l with
  | [] => acc
  | x :: t => rev_acc t (x :: acc)
  end.

Section Lists.
Variable A : Type.

Lemma list_app_nil_l : forall l : list A, [] ++ l = l.
Admitted.

Lemma list_app_nil_r : forall l : list A, l ++ [] = l.
Admitted.

Lemma list_length_cons : forall (x : A) (l : list A), length (x :: l) = S (length l).
Admitted.

Lemma list_map_nil : forall f : A -> A, map f [] = [].
Admitted.

Lemma list_map_cons : forall (f : A -> A) (x : A) (l : list A), map f (x :: l) = f x :: map f l.
Admitted.

Lemma list_cons_neq_nil : forall (x : A) (l : list A), x :: l <> [].
Admitted.

Lemma list_app_cons : forall (x : A) (l1 l2 : list A), (x :: l1) ++ l2 = x :: (l1 ++ l2).
Admitted.

Lemma list_rev_nil : rev (@nil A) = [].
Admitted.

Lemma list_rev_unit : forall x : A, rev [x] = [x].
Admitted.

Lemma list_length_nil : length (@nil A) = 0.
Admitted.

Lemma list_hd_cons : forall (d x : A) (l : list A), hd d (x :: l) = x.
Admitted.

Lemma list_In_head : forall (x : A) (l : list A), In x (x :: l).
Admitted.

Lemma list_cons_inj : forall (x y : A) (l1 l2 : list A), x :: l1 = y :: l2 -> x = y /\ l1 = l2.
Admitted.

Lemma list_app_assoc : forall l1 l2 l3 : list A, l1 ++ (l2 ++ l3) = (l1 ++ l2) ++ l3.
Admitted.

Lemma list_length_app : forall l1 l2 : list A, length (l1 ++ l2) = length l1 + length l2.
Admitted.

Lemma list_map_length : forall (f : A -> A) (l : list A), length (map f l) = length l.
Admitted.

Lemma list_map_app : forall (f : A -> A) (l1 l2 : list A), map f (l1 ++ l2) = map f l1 ++ map f l2.
Admitted.

Lemma list_map_id : forall l : list A, map (fun x => x) l = l.
Admitted.

Lemma list_map_map : forall (f g : A -> A) (l : list A), map g (map f l) = map (fun x => g (f x)) l.
Admitted.

Lemma list_In_app_l : forall (x : A) (l1 l2 : list A), In x l1 -> In x (l1 ++ l2).
Admitted.

Lemma list_In_app_or : forall (x : A) (l1 l2 : list A), In x (l1 ++ l2) -> In x l1 \/ In x l2.
Admitted.

Lemma list_in_map : forall (f : A -> A) (x : A) (l : list A), In x l -> In (f x) (map f l).
Admitted.

Lemma list_repeat_length : forall (x : A) (n : nat), length (repeat x n) = n.
Admitted.

Lemma list_nil_app : forall l1 l2 : list A, l1 ++ l2 = [] -> l1 = [].
Admitted.

Lemma list_length_zero_nil : forall l : list A, length l = 0 -> l = [].
Admitted.

Lemma list_length_map_map : forall (f g : A -> A) (l : list A), length (map g (map f l)) = length l.
Admitted.

Lemma list_length_app_cons : forall (x : A) (l1 l2 : list A),
  length (l1 ++ x :: l2) = S (length l1 + length l2).
Admitted.

Lemma list_app_inv_head : forall l l1 l2 : list A, l ++ l1 = l ++ l2 -> l1 = l2.
Admitted.

Lemma list_length_rev : forall l : list A, length (rev l) = length l.
Admitted.

Lemma list_filter_length : forall (p : A -> bool) (l : list A), length (filter p l) <= length l.
Admitted.

Lemma list_app_length_comm : forall l1 l2 : list A, length (l1 ++ l2) = length (l2 ++ l1).
Admitted.

Lemma list_rev_app : forall l1 l2 : list A, rev (l1 ++ l2) = rev l2 ++ rev l1.
Admitted.

Lemma list_rev_involutive : forall l : list A, rev (rev l) = l.
Admitted.

Lemma list_rev_acc_spec : forall l acc : list A, rev_acc l acc = rev l ++ acc.
Admitted.

Lemma list_map_rev : forall (f : A -> A) (l : list A), map f (rev l) = rev (map f l).
Admitted.

End Lists.

Lemma list_sum_nil : sum_list [] = 0.
Admitted.

Lemma list_sum_single : forall n : nat, sum_list [n] = n.
Admitted.

Lemma list_sum_app : forall l1 l2 : list nat, sum_list (l1 ++ l2) = sum_list l1 + sum_list l2.
Admitted.

Lemma list_sum_repeat : forall n k : nat, sum_list (repeat n k) = k * n.
Admitted.

Lemma list_sum_cons_ge : forall (x : nat) (l : list nat), x <= sum_list (x :: l).
Admitted.

Lemma list_fold_sum : forall l : list nat, fold_left Nat.add l 0 = sum_list l.
Admitted.
