#!/usr/bin/env bash
# Creates .venv (in the repository, gitignored) with the pinned packages of scripts/requirements.txt:
# PyTorch (CPU) and NumPy, the reference that tests compare kiln against when it is there.
# Idempotent and quiet when the venv already matches requirements.txt (a copy is kept in .venv).
#
# The interpreter is always Debian's /usr/bin/python3 (3.11 on Debian 12, installed with python3-venv
# by scripts/setup.sh python), never whatever `python3` is first on PATH: the same Python on every
# machine, and the one the pinned wheels are built for (cp311).
#
# torch: the CPU build. Where pip's own configuration serves it from a local wheel (find-links), that
# is used; where download.pytorch.org resolves, its CPU index is added so that pip prefers
# torch==2.13.0+cpu over PyPI's CUDA build of the same version (several GB).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv
requirements=scripts/requirements.txt
stamp=$venv/kiln-requirements.txt
base_python=${KILN_BASE_PYTHON:-/usr/bin/python3}

if [[ -x $venv/bin/python ]] && cmp -s "$requirements" "$stamp" && $venv/bin/python -c '' 2>/dev/null; then
  exit 0
fi

echo "setup: creating $venv with $(tr '\n' ' ' < <(grep -v '^#' "$requirements"))"
if [[ ! -x $venv/bin/python ]] || ! $venv/bin/python -c '' 2>/dev/null; then
  rm -rf "$venv"
  "$base_python" -m venv "$venv"
fi

pip_args=(--quiet --disable-pip-version-check --no-input)
if getent hosts download.pytorch.org >/dev/null 2>&1; then
  pip_args+=(--extra-index-url https://download.pytorch.org/whl/cpu)
fi
$venv/bin/python -m pip install "${pip_args[@]}" -r "$requirements"
# A CUDA build would be several GB and useless here: refuse it rather than keep it.
if ! $venv/bin/python -c 'import sys, torch; sys.exit(0 if torch.version.cuda is None else 1)'; then
  echo "setup: $venv got a CUDA build of torch; remove $venv and install the CPU build" >&2
  exit 1
fi
cp "$requirements" "$stamp"
