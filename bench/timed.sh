# shellcheck shell=bash
# Sourced by the benchmarks: one timed run of a tool, on one rank or under mpirun.
#
#   timed TIME_FILE LOG_FILE RANKS CMD...   -> the command's exit status (never fatal under set -e)
#
# CMD runs under GNU time -v into TIME_FILE, its stderr into LOG_FILE; with RANKS > 1 under
# "$MPIRUN -n RANKS", each rank under its own time -v too (TIME_FILE.rankR), so that the node's peak
# memory is the sum of the ranks' peaks (bench/timefile.py reads both).
timed() {
  local time_file=$1 log_file=$2 ranks=$3 status=0
  shift 3
  rm -f "$time_file" "$time_file".rank*
  if ((ranks == 1)); then
    /usr/bin/time -v -o "$time_file" "$@" 2>"$log_file" || status=$?
  else
    # shellcheck disable=SC2016  # $0, $OMPI_COMM_WORLD_RANK and $@ expand in the per-rank shell
    /usr/bin/time -v -o "$time_file" "${MPIRUN:-mpirun}" -n "$ranks" \
      sh -c 'exec /usr/bin/time -v -o "$0.rank$OMPI_COMM_WORLD_RANK" "$@"' "$time_file" "$@" 2>"$log_file" || status=$?
  fi
  return "$status"
}
