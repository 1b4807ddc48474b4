/-! Benchmark bank: options (and a few lists of options). Every proof is a
hole; ids match BankOption.v. Core Lean only; the helpers are defined here
exactly as in the Coq file. -/

def omap {α β : Type} (f : α → β) : Option α → Option β
  | some a => some (f a)
  | none => none

def obind {α β : Type} : Option α → (α → Option β) → Option β
  | some a, f => f a
  | none, _ => none

def get_default {α : Type} (d : α) : Option α → α
  | some a => a
  | none => d

def is_some {α : Type} : Option α → Bool
  | some _ => true
  | none => false

def nth_opt {α : Type} : List α → Nat → Option α
  | [], _ => none
  | x :: _, 0 => some x
  | _ :: t, k + 1 => nth_opt t k

def lmap {α β : Type} (f : α → β) : List α → List β
  | [] => []
  | x :: t => f x :: lmap f t

def find_first {α : Type} (p : α → Bool) : List α → Option α
  | [] => none
  | x :: t => if p x then some x else find_first p t

theorem opt_map_none : ∀ f : Nat → Nat, omap f none = none := by sorry

theorem opt_map_some : ∀ (f : Nat → Nat) (x : Nat), omap f (some x) = some (f x) := by sorry

theorem opt_bind_none : ∀ f : Nat → Option Nat, obind none f = none := by sorry

theorem opt_bind_some : ∀ (f : Nat → Option Nat) (x : Nat), obind (some x) f = f x := by sorry

theorem opt_some_inj : ∀ x y : Nat, some x = some y → x = y := by sorry

theorem opt_some_neq_none : ∀ x : Nat, some x ≠ none := by sorry

theorem opt_get_default_some : ∀ d x : Nat, get_default d (some x) = x := by sorry

theorem opt_get_default_none : ∀ d : Nat, get_default d none = d := by sorry

theorem opt_is_some_some : ∀ x : Nat, is_some (some x) = true := by sorry

theorem opt_map_id : ∀ o : Option Nat, omap (fun x => x) o = o := by sorry

theorem opt_map_compose : ∀ (f g : Nat → Nat) (o : Option Nat),
    omap g (omap f o) = omap (fun x => g (f x)) o := by sorry

theorem opt_bind_some_r : ∀ o : Option Nat, obind o some = o := by sorry

theorem opt_bind_assoc : ∀ (o : Option Nat) (f g : Nat → Option Nat),
    obind (obind o f) g = obind o (fun x => obind (f x) g) := by sorry

theorem opt_is_some_map : ∀ (f : Nat → Nat) (o : Option Nat),
    is_some (omap f o) = is_some o := by sorry

theorem opt_none_or_some : ∀ o : Option Nat, o = none ∨ ∃ x, o = some x := by sorry

theorem opt_get_default_map : ∀ (f : Nat → Nat) (d : Nat) (o : Option Nat),
    get_default (f d) (omap f o) = f (get_default d o) := by sorry

theorem opt_is_some_true : ∀ o : Option Nat, is_some o = true → ∃ x, o = some x := by sorry

theorem opt_map_none_inv : ∀ (f : Nat → Nat) (o : Option Nat), omap f o = none → o = none := by sorry

theorem opt_nth_nil : ∀ n : Nat, nth_opt ([] : List Nat) n = none := by sorry

theorem opt_find_nil : ∀ p : Nat → Bool, find_first p [] = none := by sorry

theorem opt_nth_zero : ∀ (x : Nat) (l : List Nat), nth_opt (x :: l) 0 = some x := by sorry

theorem opt_nth_length : ∀ (l : List Nat) (n : Nat), nth_opt l n = none → l.length ≤ n := by sorry

theorem opt_nth_app : ∀ (l1 l2 : List Nat) (n : Nat),
    n < l1.length → nth_opt (l1 ++ l2) n = nth_opt l1 n := by sorry

theorem opt_find_some : ∀ (p : Nat → Bool) (l : List Nat) (x : Nat),
    find_first p l = some x → p x = true := by sorry

theorem opt_nth_map : ∀ (f : Nat → Nat) (l : List Nat) (n : Nat),
    nth_opt (lmap f l) n = omap f (nth_opt l n) := by sorry
