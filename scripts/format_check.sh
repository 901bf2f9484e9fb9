#!/usr/bin/env bash
# Lists the C++ files that clang-format (.clang-format at the top) would change, and fails if any.
#   scripts/format_check.sh        check (make format-check; CI runs it before the tests)
#   scripts/format_check.sh -i     reformat them in place (make format)
set -euo pipefail
cd "$(dirname "$0")/.."

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.h' '*.cpp')
else
  mapfile -t files < <(find src tests bench -name '*.h' -o -name '*.cpp' | sort)
fi

if [[ "${1:-}" == "-i" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi

bad=()
for f in "${files[@]}"; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    bad+=("$f")
  fi
done
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "format-check: ${#bad[@]} of ${#files[@]} files need formatting (make format fixes them):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
