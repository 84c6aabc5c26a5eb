#!/usr/bin/env bash
# Replays the seeds in stranger_seeds.txt with ../shared/hooks/stranger-check (a scene generator that is
# not ours) against BIN: every scene must be identical at 1, 2, 3 and 4 ranks.
# Usage: stranger_seeds.sh BIN HOOK
set -euo pipefail
bin=$1
hook=$2
list="$(dirname "${BASH_SOURCE[0]}")/stranger_seeds.txt"
[[ -x $hook ]] || { echo "stranger_seeds: $hook is missing (../shared beside the source tree)" >&2; exit 1; }
failed=0
while read -r seed _; do
  [[ -z $seed || $seed == \#* ]] && continue
  out=$("$hook" "$seed" "$bin" 1 2>&1 </dev/null)  # mpirun would read the seed list from stdin
  if [[ $out == *"identical at 1, 2, 3 and 4 ranks"* ]]; then
    echo "seed $seed: identical at 1-4 ranks"
  else
    echo "seed $seed: FAILED"
    printf '%s\n' "$out" | sed 's/^/  /'
    failed=1
  fi
done <"$list"
exit "$failed"
