/-! Benchmark bank: booleans. Every proof is a hole; ids match BankBool.v.
Core Lean only (no Mathlib). `implb` is defined as Coq defines it. -/

def implb (a b : Bool) : Bool := if a then b else true

def count_true : List Bool → Nat
  | [] => 0
  | b :: t => (if b then 1 else 0) + count_true t

theorem bool_negb_involutive : ∀ b : Bool, (!(!b)) = b := by sorry

theorem bool_andb_true_l : ∀ b : Bool, (true && b) = b := by sorry

theorem bool_andb_false_r : ∀ b : Bool, (b && false) = false := by sorry

theorem bool_orb_true_r : ∀ b : Bool, (b || true) = true := by sorry

theorem bool_andb_comm : ∀ a b : Bool, (a && b) = (b && a) := by sorry

theorem bool_orb_comm : ∀ a b : Bool, (a || b) = (b || a) := by sorry

theorem bool_andb_assoc : ∀ a b c : Bool, (a && (b && c)) = ((a && b) && c) := by sorry

theorem bool_orb_assoc : ∀ a b c : Bool, (a || (b || c)) = ((a || b) || c) := by sorry

theorem bool_negb_andb : ∀ a b : Bool, (!(a && b)) = (!a || !b) := by sorry

theorem bool_negb_orb : ∀ a b : Bool, (!(a || b)) = (!a && !b) := by sorry

theorem bool_andb_orb_distrib : ∀ a b c : Bool, (a && (b || c)) = ((a && b) || (a && c)) := by sorry

theorem bool_xorb_self : ∀ b : Bool, Bool.xor b b = false := by sorry

theorem bool_andb_negb_r : ∀ b : Bool, (b && !b) = false := by sorry

theorem bool_orb_negb_r : ∀ b : Bool, (b || !b) = true := by sorry

theorem bool_if_same : ∀ (b : Bool) (x : Nat), (if b then x else x) = x := by sorry

theorem bool_negb_if : ∀ (b : Bool) (x y : Nat),
    (if !b then x else y) = (if b then y else x) := by sorry

theorem bool_implb_true_r : ∀ a : Bool, implb a true = true := by sorry

theorem bool_eqb_refl : ∀ b : Bool, (b == b) = true := by sorry

theorem bool_andb_true_elim : ∀ a b : Bool, (a && b) = true → a = true ∧ b = true := by sorry

theorem bool_orb_false_elim : ∀ a b : Bool, (a || b) = false → a = false ∧ b = false := by sorry

theorem bool_negb_inj : ∀ a b : Bool, (!a) = (!b) → a = b := by sorry

theorem bool_eqb_eq : ∀ a b : Bool, (a == b) = true → a = b := by sorry

theorem bool_xorb_negb : ∀ a b : Bool, (!(Bool.xor a (!b))) = Bool.xor a b := by sorry

theorem bool_if_andb : ∀ (a b : Bool) (x y : Nat),
    (if a && b then x else y) = (if a then (if b then x else y) else y) := by sorry

theorem bool_count_true_app : ∀ l1 l2 : List Bool,
    count_true (l1 ++ l2) = count_true l1 + count_true l2 := by sorry

theorem bool_count_true_le : ∀ l : List Bool, count_true l ≤ l.length := by sorry

theorem bool_nat_eqb_sym : ∀ n m : Nat, Nat.beq n m = Nat.beq m n := by sorry
