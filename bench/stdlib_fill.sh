#!/usr/bin/env bash
# Re-proving check on a real library file: copy it, turn its Qed proofs into
# Admitted., run `orch fill` on the copy, and recompile the result.
#   usage: bench/stdlib_fill.sh /usr/lib/ocaml/coq/theories/Bool/Bool.v [more orch fill options]
set -euo pipefail
src=${1:?usage: bench/stdlib_fill.sh FILE.v [orch fill options]}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
py="$here/.venv/bin/python"
work=$(mktemp -d "${TMPDIR:-/tmp}/orch-stdlib-XXXXXX")
copy="$work/$(basename "$src")"
"$py" - "$src" "$copy" <<'PY'
import sys
from pathlib import Path
from proof_orchestrator.project.coq_holes import admit_proofs
text, hidden = admit_proofs(Path(sys.argv[1]).read_text())
Path(sys.argv[2]).write_text(text)
print(f"{len(hidden)} Qed proofs hidden in {sys.argv[2]}")
PY
"$here/.venv/bin/orch" fill "$copy" --db "$work/ledger.sqlite" "$@"
remaining=$(grep -c "Admitted\." "$copy" || true)
if (cd "$work" && coqc "$(basename "$copy")" >/dev/null); then ok=yes; else ok=NO; fi
echo "after fill: $remaining holes remain; the file compiles: $ok; work folder: $work"
