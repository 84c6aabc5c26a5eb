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
  # One clang-format over every file: a process per file was 46 of the check's 48 s on a 2-core VM.
  status=0
  report=$(clang-format --dry-run --Werror --style=file "${files[@]}" 2>&1) || status=$?
  if ((status)); then
    mapfile -t bad < <(grep -oE '^[^:]+:[0-9]+:[0-9]+: error: code should be clang-formatted' <<<"$report" |
      cut -d: -f1 | sort -u)
    if ((${#bad[@]} == 0)); then
      echo "format.sh: clang-format failed: $report" >&2
      exit 1
    fi
    printf 'format.sh: not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format.sh: ${#files[@]} files formatted"
  exit 0
fi
clang-format -i --style=file "${files[@]}"
