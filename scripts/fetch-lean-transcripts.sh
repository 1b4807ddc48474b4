#!/usr/bin/env bash
# Fill .cache/lean-repl-transcripts with the Lean REPL's own test transcripts:
# a sparse clone of leanprover-community/repl at the pinned commit (only its
# test/ folder), nothing built. core/ gets test/*.in and *.expected.out,
# mathlib/ gets test/Mathlib/test/*. Safe to run twice.
set -euo pipefail

REPO_URL=${ORCH_LEAN_REPL_GIT:-https://github.com/leanprover-community/repl}
COMMIT=8948401ab4924499421c94b7facdfca5ff27d81d
DEST=${1:-.cache/lean-repl-transcripts}

if [ -f "$DEST/.commit" ] && [ "$(cat "$DEST/.commit")" = "$COMMIT" ]; then
  echo "lean-transcripts: $DEST already holds repl ${COMMIT:0:7}"
  exit 0
fi
command -v git >/dev/null || { echo "lean-transcripts: git is needed" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! git clone -q --filter=blob:none --no-checkout "$REPO_URL" "$work/repl"; then
  echo "lean-transcripts: could not clone $REPO_URL (no network?)." >&2
  echo "Set ORCH_LEAN_TRANSCRIPTS to a folder with core/ and mathlib/ instead." >&2
  exit 1
fi
git -C "$work/repl" sparse-checkout set --no-cone '/test/*.in' '/test/*.expected.out' '/test/Mathlib/test/*'
git -C "$work/repl" checkout -q "$COMMIT"

rm -rf "$DEST.tmp"
mkdir -p "$DEST.tmp/core" "$DEST.tmp/mathlib"
cp "$work"/repl/test/*.in "$work"/repl/test/*.expected.out "$DEST.tmp/core/"
cp "$work"/repl/test/Mathlib/test/*.in "$work"/repl/test/Mathlib/test/*.expected.out "$DEST.tmp/mathlib/"
echo "$COMMIT" > "$DEST.tmp/.commit"
rm -rf "$DEST"
mv "$DEST.tmp" "$DEST"
echo "lean-transcripts: $(ls "$DEST/core"/*.in | wc -l) core and $(ls "$DEST/mathlib"/*.in | wc -l) Mathlib transcripts in $DEST"
