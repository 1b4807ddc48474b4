#!/usr/bin/env bash
# Re-proving check on real library files: copy them, turn their Qed proofs into
# Admitted., run `orch fill` on the copies, recompile the results, and measure.
#   usage: bench/stdlib_fill.sh FILE.v [FILE.v ...] [-- orch fill options]
#   e.g.   bench/stdlib_fill.sh theories/Sets/Powerset_facts.v -- --budget 10 --cpu-target 1.0
# Writes bench/results/<time>-stdlib-fill.json: holes, proved, the process tree's
# CPU seconds (orch, its provers and their ATPs, from getrusage once all are
# reaped), and the whole machine's busy fraction sampled from /proc/stat.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py="$here/.venv/bin/python"
files=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do files+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#files[@]} -gt 0 ] || { echo "usage: bench/stdlib_fill.sh FILE.v... [-- orch fill options]" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/orch-stdlib-XXXXXX")
exec "$py" "$here/bench/stdlib_fill.py" "$work" "${files[@]}" -- "$@"
