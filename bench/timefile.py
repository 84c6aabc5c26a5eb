"""GNU time -v files of bench/timed.sh: the wall time of a run and its peak memory, summed over the
ranks' own files (TIME_FILE.rankR) when it ran under mpirun."""
import glob
import re


def wall_seconds(time_file):
    h, m, s = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)",
                        open(time_file).read()).groups()
    return (int(h) if h else 0) * 3600 + int(m) * 60 + float(s)


def peak_bytes(time_file):
    files = sorted(glob.glob(time_file + ".rank*")) or [time_file]
    kib = 0
    for f in files:
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(f).read())
        kib += int(m.group(1)) if m else 0
    return kib * 1024
