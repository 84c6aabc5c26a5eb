# shellcheck shell=bash
# Sourced by amr_bench.sh and unbind_bench.sh: a timed run of a tool, on one rank or under mpirun.
#
#   timed TIME_FILE LOG_FILE RANKS CMD...   -> the command's exit status (never fatal under set -e)
#
# CMD runs under GNU time -v into TIME_FILE, its stderr into LOG_FILE; with RANKS > 1 under
# "$MPIRUN -n RANKS", each rank under its own time -v too (TIME_FILE.rankR), so that the node's peak
# memory is the sum of the ranks' peaks (bench/timefile.py reads both).
#
# BENCH_REPEAT=N (default 1): the command runs N times and the run with the median wall time is kept
# (its time files and its log), the others deleted; a failed run stops there and is kept. On a machine
# shared with other jobs single runs of one build vary by 20 % and more from hour to hour; the median
# of 3 or 5 is what a table should quote. Outputs, and the phases in their manifests, are the last
# run's: read only counts from them beside the median's wall time.
#
# TIMED_OUTPUT=PATH (optional, e.g. as a prefix of the call): the run's output, removed with its
# manifest before each run, outside the timing. A pipeline's first run writes a new file; writing over
# an old one makes the tool's final rename free the old file's pages, inside its time (0.24-0.26 s for
# 328-537 MB grids on the benchmark VM).
timed_once() {
  local time_file=$1 log_file=$2 ranks=$3 status=0
  shift 3
  rm -f "$time_file" "$time_file".rank*
  if [[ -n ${TIMED_OUTPUT:-} ]]; then rm -f "$TIMED_OUTPUT" "$TIMED_OUTPUT.json"; fi
  if ((ranks == 1)); then
    /usr/bin/time -v -o "$time_file" "$@" 2>"$log_file" || status=$?
  else
    # More ranks than cores (e.g. 4 on a 2-core laptop) would be refused by Open MPI without
    # oversubscription; the ranks then share the cores, which their time files show.
    # shellcheck disable=SC2016  # $0, $OMPI_COMM_WORLD_RANK and $@ expand in the per-rank shell
    OMPI_MCA_rmaps_base_oversubscribe=${OMPI_MCA_rmaps_base_oversubscribe:-1} \
      /usr/bin/time -v -o "$time_file" "${MPIRUN:-mpirun}" -n "$ranks" \
      sh -c 'exec /usr/bin/time -v -o "$0.rank$OMPI_COMM_WORLD_RANK" "$@"' "$time_file" "$@" 2>"$log_file" || status=$?
  fi
  return "$status"
}

# The wall seconds of a GNU time -v file ("Elapsed (wall clock) time (h:mm:ss or m:ss): 1:02.34").
wall_seconds() {
  awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$1"
}

# Try N's files become the run's (TIME_FILE, its .rankR files, LOG_FILE); the other tries' go.
keep_try() {
  local time_file=$1 log_file=$2 n=$3 f
  mv "$log_file.try$n" "$log_file"
  mv "$time_file.try$n" "$time_file"
  for f in "$time_file.try$n".rank*; do
    if [[ -e $f ]]; then mv "$f" "$time_file${f#"$time_file.try$n"}"; fi
  done
  rm -f "$time_file".try* "$log_file".try*
}

timed() {
  local time_file=$1 log_file=$2 ranks=$3 repeat=${BENCH_REPEAT:-1} status=0 i
  shift 3
  if ! [[ $repeat =~ ^[1-9][0-9]*$ ]]; then
    echo "timed.sh: BENCH_REPEAT must be a positive whole number, not '$repeat'" >&2
    return 2
  fi
  if ((repeat == 1)); then
    timed_once "$time_file" "$log_file" "$ranks" "$@" || status=$?
    return "$status"
  fi
  rm -f "$time_file" "$time_file".rank* "$time_file".try* "$log_file".try*
  local walls=""
  for ((i = 1; i <= repeat; i++)); do
    timed_once "$time_file.try$i" "$log_file.try$i" "$ranks" "$@" || status=$?
    if ((status != 0)); then
      keep_try "$time_file" "$log_file" "$i"
      return "$status"
    fi
    walls+="$(wall_seconds "$time_file.try$i") $i"$'\n'
  done
  keep_try "$time_file" "$log_file" "$(printf '%s' "$walls" | LC_ALL=C sort -g | awk -v m=$(((repeat + 1) / 2)) 'NR == m { print $2 }')"
}
