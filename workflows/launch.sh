#!/usr/bin/env bash
# launch.sh LAUNCHER -n N COMMAND...: COMMAND on N MPI ranks under LAUNCHER ("mpirun", "srun", or with
# options: "srun --hint nomultithread"), or alone when N is 1 (a singleton MPI run: no launcher needed).
# The Snakefile's {resources.mpi} and pipeline.sh start every tool through it.
set -euo pipefail
if (($# < 4)) || [[ $2 != -n ]]; then
  echo "launch.sh: usage: launch.sh LAUNCHER -n N COMMAND..." >&2
  exit 2
fi
launcher=$1 n=$3
shift 3
if ((n > 1)); then
  # shellcheck disable=SC2086  # the launcher may carry its own options
  exec $launcher -n "$n" "$@"
fi
exec "$@"
