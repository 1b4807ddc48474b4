#!/usr/bin/env bash
# Make sure Coq 8.16, CoqHammer, E and CVC4 (the provers), dune (the tests compare
# orch's reading of dune projects with dune's own), Chromium (for the
# dashboard's browser tests) and PostgreSQL (for the ledger's tests on a real
# server) are installed as Debian packages. Installs what
# is missing when we are root; otherwise says what to install.
set -euo pipefail

missing=()
command -v coqtop >/dev/null 2>&1 || missing+=(coq)
command -v coqc >/dev/null 2>&1 || missing+=(coq)
[ -d /usr/lib/ocaml/coq/user-contrib/Hammer ] || missing+=(libcoq-hammer)
command -v eprover >/dev/null 2>&1 || missing+=(eprover)
command -v cvc4 >/dev/null 2>&1 || missing+=(cvc4)
command -v dune >/dev/null 2>&1 || missing+=(dune)
[ -x /usr/bin/chromium ] || missing+=(chromium)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)

if [ ${#missing[@]} -eq 0 ]; then
  echo "provers: coq $(coqc --version | sed -n 's/.*version \([^ ]*\).*/\1/p' | head -1), coq-hammer, eprover, cvc4, dune, chromium, postgresql present"
  exit 0
fi

packages=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "provers: installing ${packages}(Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq ${packages} >/dev/null
  echo "provers: installed"
else
  echo "provers: missing Debian packages: ${packages}" >&2
  echo "Install them as root:  apt-get update && apt-get install -y ${packages}" >&2
  exit 1
fi
