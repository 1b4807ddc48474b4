(* Benchmark bank: options (and a few lists of options). Every proof is a
   hole; ids match BankOption.lean. Only Coq's prelude is loaded. *)

Definition omap {A B : Type} (f : A -> B) (o : option A) : option B :=
  match o with
  | Some a => Some (f a)
  | None => None
  end.

Definition obind {A B : Type} (o : option A) (f : A -> option B) : option B :=
  match o with
  | Some a => f a
  | None => None
  end.

Definition get_default {A : Type} (d : A) (o : option A) : A :=
  match o with
  | Some a => a
  | None => d
  end.

Definition is_some {A : Type} (o : option A) : bool :=
  match o with
  | Some _ => true
  | None => false
  end.

Fixpoint nth_opt {A : Type} (l : list A) (n : nat) : option A :=
  match l, n with
  | nil, _ => None
  | cons x _, 0 => Some x
  | cons _ t, S k => nth_opt t k
  end.

Fixpoint lmap {A B : Type} (f : A -> B) (l : list A) : list B :=
  match l with
  | nil => nil
  | cons x t => cons (f x) (lmap f t)
  end.

Fixpoint find_first {A : Type} (p : A -> bool) (l : list A) : option A :=
  match l with
  | nil => None
  | cons x t => if p x then Some x else find_first p t
  end.

Lemma opt_map_none : forall f : nat -> nat, omap f None = None.
Admitted.

Lemma opt_map_some : forall (f : nat -> nat) (x : nat), omap f (Some x) = Some (f x).
Admitted.

Lemma opt_bind_none : forall f : nat -> option nat, obind None f = None.
Admitted.

Lemma opt_bind_some : forall (f : nat -> option nat) (x : nat), obind (Some x) f = f x.
Admitted.

Lemma opt_some_inj : forall x y : nat, Some x = Some y -> x = y.
Admitted.

Lemma opt_some_neq_none : forall x : nat, Some x <> None.
Admitted.

Lemma opt_get_default_some : forall d x : nat, get_default d (Some x) = x.
Admitted.

Lemma opt_get_default_none : forall d : nat, get_default d None = d.
Admitted.

Lemma opt_is_some_some : forall x : nat, is_some (Some x) = true.
Admitted.

Lemma opt_map_id : forall o : option nat, omap (fun x => x) o = o.
Admitted.

Lemma opt_map_compose : forall (f g : nat -> nat) (o : option nat),
  omap g (omap f o) = omap (fun x => g (f x)) o.
Admitted.

Lemma opt_bind_some_r : forall o : option nat, obind o (@Some nat) = o.
Admitted.

Lemma opt_bind_assoc : forall (o : option nat) (f g : nat -> option nat),
  obind (obind o f) g = obind o (fun x => obind (f x) g).
Admitted.

Lemma opt_is_some_map : forall (f : nat -> nat) (o : option nat), is_some (omap f o) = is_some o.
Admitted.

Lemma opt_none_or_some : forall o : option nat, o = None \/ exists x, o = Some x.
Admitted.

Lemma opt_get_default_map : forall (f : nat -> nat) (d : nat) (o : option nat),
  get_default (f d) (omap f o) = f (get_default d o).
Admitted.

Lemma opt_is_some_true : forall o : option nat, is_some o = true -> exists x, o = Some x.
Admitted.

Lemma opt_map_none_inv : forall (f : nat -> nat) (o : option nat), omap f o = None -> o = None.
Admitted.

Lemma opt_nth_nil : forall n : nat, nth_opt (@nil nat) n = None.
Admitted.

Lemma opt_find_nil : forall p : nat -> bool, find_first p nil = None.
Admitted.

Lemma opt_nth_zero : forall (x : nat) (l : list nat), nth_opt (cons x l) 0 = Some x.
Admitted.

Lemma opt_nth_length : forall (l : list nat) (n : nat), nth_opt l n = None -> length l <= n.
Admitted.

Lemma opt_nth_app : forall (l1 l2 : list nat) (n : nat),
  n < length l1 -> nth_opt (app l1 l2) n = nth_opt l1 n.
Admitted.

Lemma opt_find_some : forall (p : nat -> bool) (l : list nat) (x : nat),
  find_first p l = Some x -> p x = true.
Admitted.

Lemma opt_nth_map : forall (f : nat -> nat) (l : list nat) (n : nat),
  nth_opt (lmap f l) n = omap f (nth_opt l n).
Admitted.
