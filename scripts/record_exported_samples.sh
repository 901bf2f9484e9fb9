#!/usr/bin/env bash
# Records PyTorch's OpInfo and module_db samples as exported programs with the venv's PyTorch
# (tests/tools/record_exported_samples.py) and commits-ready packs them: tests/data/exported_samples/
# ops.tar.xz, modules.tar.xz and stamp.txt (the recorder's hash and PyTorch's version, which the
# kiln_exported_samples_fresh test compares). Run it when the recorder or the pinned PyTorch
# changes; it takes about 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
recorder=tests/tools/record_exported_samples.py
dest=tests/data/exported_samples
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" "$recorder" --out "$work/ops"
"$python" "$recorder" --modules --samples 2 --out "$work/modules"
mkdir -p "$dest"
for set in ops modules; do
  # Sorted names and no owners or times: the same recording packs to the same bytes.
  tar -C "$work/$set" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - . | xz -9 -T2 > "$dest/$set.tar.xz"
done
"$python" "$recorder" --stamp > "$dest/stamp.txt"
ls -l "$dest"
