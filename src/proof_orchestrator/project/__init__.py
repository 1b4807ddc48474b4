"""Finding holes in user files and writing verified proofs back into them."""
