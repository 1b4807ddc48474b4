/-! Benchmark bank: lists. Every proof is a hole; ids match BankList.v.
Core Lean only (no Mathlib). The polymorphic lemmas live in a section, as in
the Coq file. -/

def sum_list : List Nat → Nat
  | [] => 0
  | x :: t => x + sum_list t

def rev_acc {α : Type} : List α → List α → List α
  | [], acc => acc
  | x :: t, acc => rev_acc t (x :: acc)

section Lists
variable {A : Type}

theorem list_app_nil_l : ∀ l : List A, [] ++ l = l := by sorry

theorem list_app_nil_r : ∀ l : List A, l ++ [] = l := by sorry

theorem list_length_cons : ∀ (x : A) (l : List A), (x :: l).length = l.length + 1 := by sorry

theorem list_map_nil : ∀ f : A → A, List.map f [] = [] := by sorry

theorem list_map_cons : ∀ (f : A → A) (x : A) (l : List A),
    List.map f (x :: l) = f x :: List.map f l := by sorry

theorem list_cons_neq_nil : ∀ (x : A) (l : List A), x :: l ≠ [] := by sorry

theorem list_app_cons : ∀ (x : A) (l1 l2 : List A), (x :: l1) ++ l2 = x :: (l1 ++ l2) := by sorry

theorem list_rev_nil : ([] : List A).reverse = [] := by sorry

theorem list_rev_unit : ∀ x : A, [x].reverse = [x] := by sorry

theorem list_length_nil : ([] : List A).length = 0 := by sorry

theorem list_hd_cons : ∀ (d x : A) (l : List A), (x :: l).headD d = x := by sorry

theorem list_In_head : ∀ (x : A) (l : List A), x ∈ x :: l := by sorry

theorem list_cons_inj : ∀ (x y : A) (l1 l2 : List A), x :: l1 = y :: l2 → x = y ∧ l1 = l2 := by sorry

theorem list_app_assoc : ∀ l1 l2 l3 : List A, l1 ++ (l2 ++ l3) = (l1 ++ l2) ++ l3 := by sorry

theorem list_length_app : ∀ l1 l2 : List A, (l1 ++ l2).length = l1.length + l2.length := by sorry

theorem list_map_length : ∀ (f : A → A) (l : List A), (List.map f l).length = l.length := by sorry

theorem list_map_app : ∀ (f : A → A) (l1 l2 : List A),
    List.map f (l1 ++ l2) = List.map f l1 ++ List.map f l2 := by sorry

theorem list_map_id : ∀ l : List A, List.map (fun x => x) l = l := by sorry

theorem list_map_map : ∀ (f g : A → A) (l : List A),
    List.map g (List.map f l) = List.map (fun x => g (f x)) l := by sorry

theorem list_In_app_l : ∀ (x : A) (l1 l2 : List A), x ∈ l1 → x ∈ l1 ++ l2 := by sorry

theorem list_In_app_or : ∀ (x : A) (l1 l2 : List A), x ∈ l1 ++ l2 → x ∈ l1 ∨ x ∈ l2 := by sorry

theorem list_in_map : ∀ (f : A → A) (x : A) (l : List A), x ∈ l → f x ∈ List.map f l := by sorry

theorem list_repeat_length : ∀ (x : A) (n : Nat), (List.replicate n x).length = n := by sorry

theorem list_nil_app : ∀ l1 l2 : List A, l1 ++ l2 = [] → l1 = [] := by sorry

theorem list_length_zero_nil : ∀ l : List A, l.length = 0 → l = [] := by sorry

theorem list_length_map_map : ∀ (f g : A → A) (l : List A),
    (List.map g (List.map f l)).length = l.length := by sorry

theorem list_length_app_cons : ∀ (x : A) (l1 l2 : List A),
    (l1 ++ x :: l2).length = l1.length + l2.length + 1 := by sorry

theorem list_app_inv_head : ∀ l l1 l2 : List A, l ++ l1 = l ++ l2 → l1 = l2 := by sorry

theorem list_length_rev : ∀ l : List A, l.reverse.length = l.length := by sorry

theorem list_filter_length : ∀ (p : A → Bool) (l : List A), (l.filter p).length ≤ l.length := by sorry

theorem list_app_length_comm : ∀ l1 l2 : List A, (l1 ++ l2).length = (l2 ++ l1).length := by sorry

theorem list_rev_app : ∀ l1 l2 : List A, (l1 ++ l2).reverse = l2.reverse ++ l1.reverse := by sorry

theorem list_rev_involutive : ∀ l : List A, l.reverse.reverse = l := by sorry

theorem list_rev_acc_spec : ∀ l acc : List A, rev_acc l acc = l.reverse ++ acc := by sorry

theorem list_map_rev : ∀ (f : A → A) (l : List A),
    List.map f l.reverse = (List.map f l).reverse := by sorry

end Lists

theorem list_sum_nil : sum_list [] = 0 := by sorry

theorem list_sum_single : ∀ n : Nat, sum_list [n] = n := by sorry

theorem list_sum_app : ∀ l1 l2 : List Nat, sum_list (l1 ++ l2) = sum_list l1 + sum_list l2 := by sorry

theorem list_sum_repeat : ∀ n k : Nat, sum_list (List.replicate k n) = k * n := by sorry

theorem list_sum_cons_ge : ∀ (x : Nat) (l : List Nat), x ≤ sum_list (x :: l) := by sorry

theorem list_fold_sum : ∀ l : List Nat, List.foldl Nat.add 0 l = sum_list l := by sorry
