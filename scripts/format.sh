#!/usr/bin/env bash
# Formats phew's C++ sources with the root .clang-format (Debian 12's clang-format 14):
#   scripts/format.sh           rewrites the files in place
#   scripts/format.sh --check   changes nothing; names every file that is not formatted, exit 1 if any
# Declarative tables (io::Table, manifest::Fields) stay one column per line between
# `// clang-format off` and `// clang-format on`.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(find lib tools tests bench examples \( -name '*.cpp' -o -name '*.hpp' \) | sort)
if [[ ${1:-} == --check ]]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --style=file "$f" | cmp -s - "$f" || bad+=("$f")
  done
  if ((${#bad[@]})); then
    printf 'format.sh: not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format.sh: ${#files[@]} files formatted"
  exit 0
fi
clang-format -i --style=file "${files[@]}"
