#!/bin/bash
# Touches most of the machine's free memory once and says what it cost a GiB: how dear a first touch
# is on this machine right now. On this project's VM the host backs guest memory only when it is first
# written and takes back what the guest frees within a minute (virtio-balloon free page reporting):
# 4 GiB took 9.5 s, the same 4 GiB again at once 0.7 s, and 10.0 s a minute later (bench/README.md,
# "Cold memory"). So the warmth does not last: compare builds by alternating runs in one sitting.
#
#   bench/warm_memory.sh          # 80 % of MemAvailable
#   bench/warm_memory.sh 8        # 8 GiB
set -euo pipefail

if [[ $# -gt 1 || ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
if [[ $# -eq 1 ]]; then
  [[ $1 =~ ^[0-9]+$ && $1 -gt 0 ]] || { echo "warm_memory.sh: $1 is not a whole number of GiB" >&2; exit 2; }
  gib=$1
else
  avail_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
  gib=$((avail_kib * 8 / 10 / 1048576))
fi
[[ $gib -gt 0 ]] || { echo "warm_memory.sh: less than 1 GiB available; nothing to do" >&2; exit 0; }

# One GiB at a time (the process never holds more than what it is told), each page written once.
/usr/bin/python3 - "$gib" <<'EOF'
import sys, time
import numpy as np
gib = int(sys.argv[1])
start = time.monotonic()
held = []
for _ in range(gib):
    held.append(np.ones(1 << 30, dtype=np.uint8))  # np.ones writes every byte
seconds = time.monotonic() - start
print(f"warm_memory: touched {gib} GiB in {seconds:.1f} s ({seconds / gib:.2f} s/GiB)")
EOF
