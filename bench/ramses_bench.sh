#!/usr/bin/env bash
# Benchmark phew's RAMSES reader: particles read per second by cic-project from a RAMSES output (1 and 2
# ranks), from the same particles converted to Gadget-style HDF5 (1 and 2 ranks), and by yt's RAMSES
# frontend (Debian python3-yt, one process). See bench/README.md.
#
#   bench/ramses_bench.sh [--n N] [--seed S] [--repeat R] [--out DIR] [--no-yt] [--no-synthetic]
#
# Two cases:
#   shared     ../shared/data/ramses-cosmo-L20-N32/output_00004 (32,768 particles, 2 files) and its
#              independent conversion reference/snap_004.hdf5
#   synthetic  N particles (default 256^3) of bench/make_snapshot.py's clustered model, written as a
#              RAMSES output by tests/data/make_ramses.py in output_00004's box (its info and amr files,
#              ncpu = 2, so that yt can open it) and converted back to HDF5 like reference/ (float64
#              Coordinates, Velocities, Masses, uint64 IDs)
# Every runner runs R times (default 3) under /usr/bin/time -v; the table shows the fastest read. phew's
# read time is the `read` phase of cic-project's manifest (collective: counting the files' families,
# reading the share, checks); its `open` phase also fingerprints every input file for the manifest. yt's
# open is yt.load + the AMR index, its read the positions and masses. Prints a table and writes
# DIR/ramses_bench.json.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
PY=/usr/bin/python3
CIC=${CIC:-$root/build/bin/cic-project}
MPIRUN=${MPIRUN:-mpirun}
shared=${PHEW_SHARED_DATA:-$root/../shared/data}/ramses-cosmo-L20-N32

n=16777216
seed=1
repeat=3
out=$here/out/ramses
yt=1
synthetic=1
while (($#)); do
  case $1 in
    --n) n=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-yt) yt=0; shift ;;
    --no-synthetic) synthetic=0; shift ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ramses_bench: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

log() { echo "ramses_bench: $*" >&2; }
[[ -x $CIC ]] || { log "$CIC not found: build it first"; exit 1; }
[[ -d $shared/output_00004 ]] || { log "$shared/output_00004 not found (set PHEW_SHARED_DATA)"; exit 1; }
for pkg in time python3-yt; do
  [[ $pkg == python3-yt && $yt == 0 ]] && continue
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    log "installing Debian package $pkg"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$pkg" >/dev/null
  fi
done
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

# --- inputs ----------------------------------------------------------------------------------------
cases=(shared)
declare -A ramses hdf5 count
ramses[shared]=$shared/output_00004
hdf5[shared]=$shared/reference/snap_004.hdf5
count[shared]=32768
if ((synthetic)); then
  cases+=(synthetic)
  src=$out/snap_clustered_n${n}_s$seed.hdf5
  syn=$out/ramses_n${n}_s$seed
  if [[ ! -s $src ]]; then
    log "generating $src"
    "$PY" "$here/make_snapshot.py" "$src.tmp" --model clustered --n "$n" --seed "$seed"
    mv "$src.tmp" "$src"
  fi
  if [[ ! -s $syn/output_00001/part_00001.out00002 ]]; then
    log "writing $syn/output_00001 (RAMSES) and $syn/converted.hdf5"
    rm -rf "$syn"
    "$PY" "$root/tests/data/make_ramses.py" "$src" "$syn" --template "$shared/output_00004" >/dev/null
    "$PY" - "$syn/output_00001" "$syn/converted.hdf5" "$root/examples" <<'PY'
import sys
import h5py, numpy as np
sys.path.insert(0, sys.argv[3])
import ramses_phew as rp
folder, path = sys.argv[1], sys.argv[2]
info = rp.read_info(folder)
length, mass = rp.units(info)
p = rp.read_particles(folder, ("position_x", "position_y", "position_z", "velocity_x", "velocity_y", "velocity_z",
                               "mass", "identity"))
v = info["unit_l"] / info["unit_t"] / 1e5
with h5py.File(path + ".tmp", "w") as f:
    h = f.create_group("Header")
    n = len(p["mass"])
    h.attrs["BoxSize"] = info["boxlen"] * length
    h.attrs["NumPart_ThisFile"] = np.array([0, n, 0, 0, 0, 0], dtype=np.uint64)
    h.attrs["NumPart_Total"] = np.array([0, n, 0, 0, 0, 0], dtype=np.uint64)
    h.attrs["MassTable"] = np.zeros(6)
    h.attrs["Time"], h.attrs["Redshift"] = info["aexp"], 1 / info["aexp"] - 1
    h.attrs["HubbleParam"], h.attrs["Omega0"], h.attrs["OmegaLambda"] = info["H0"] / 100, info["omega_m"], info["omega_l"]
    g = f.create_group("PartType1")
    g["Coordinates"] = np.stack([p[f"position_{c}"] for c in "xyz"], axis=1) * length
    g["Velocities"] = np.stack([p[f"velocity_{c}"] for c in "xyz"], axis=1) * v
    g["Masses"] = p["mass"] * mass
    g["ParticleIDs"] = p["identity"].astype(np.uint64)
import os
os.replace(path + ".tmp", path)
PY
  fi
  ramses[synthetic]=$syn/output_00001
  hdf5[synthetic]=$syn/converted.hdf5
  count[synthetic]=$n
fi

# --- timed runs ------------------------------------------------------------------------------------
for c in "${cases[@]}"; do
  d=$out/$c
  mkdir -p "$d"
  cat "${ramses[$c]}"/part_* "${hdf5[$c]}" >/dev/null  # every runner starts from the page cache
  for k in $(seq 1 "$repeat"); do
    for input in ramses hdf5; do
      if [[ $input == ramses ]]; then path=${ramses[$c]}; else path=${hdf5[$c]}; fi
      log "$c: phew $input, 1 rank ($k/$repeat)"
      rm -f "$d/$input.1.$k.h5"*
      /usr/bin/time -v -o "$d/$input.1.$k.time" "$CIC" "$path" -o "$d/$input.1.$k.h5" --grid 32 -q
      log "$c: phew $input, 2 ranks ($k/$repeat)"
      rm -f "$d/$input.2.$k.h5"* "$d/$input.2.$k.time"*
      # shellcheck disable=SC2016  # expanded by the per-rank shell
      /usr/bin/time -v -o "$d/$input.2.$k.time" "$MPIRUN" -n 2 \
        sh -c 'exec /usr/bin/time -v -o "$0.rank$OMPI_COMM_WORLD_RANK" "$@"' "$d/$input.2.$k.time" \
        "$CIC" "$path" -o "$d/$input.2.$k.h5" --grid 32 -q
    done
    if ((yt)); then
      log "$c: yt ($k/$repeat)"
      info=$(ls "${ramses[$c]}"/info_*.txt)
      /usr/bin/time -v -o "$d/yt.1.$k.time" "$PY" "$here/ramses_yt.py" "$info" --json "$d/yt.1.$k.json" >/dev/null
    fi
  done
done

# --- table and JSON --------------------------------------------------------------------------------
"$PY" - "$out" "$repeat" "${cases[*]}" "${count[shared]}" "${count[synthetic]:-0}" <<'EOF'
import json, re, sys
from pathlib import Path

out, repeat, cases = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split()
counts = {"shared": int(sys.argv[4]), "synthetic": int(sys.argv[5])}


def gnu_time(path):
    text = path.read_text()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024
    wall = 0.0
    for part in re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1).split(":"):
        wall = wall * 60 + float(part)
    return wall, rss


rows = []
for case in cases:
    d, n = out / case, counts[case]
    for runner, ranks in (("phew ramses", 1), ("phew ramses", 2), ("phew hdf5", 1), ("phew hdf5", 2), ("yt ramses", 1)):
        runs = []
        for k in range(1, repeat + 1):
            tag = f"{runner.split()[1] if runner.startswith('phew') else 'yt'}.{ranks}.{k}"
            tfile = d / f"{tag}.time"
            if not tfile.exists():
                continue
            wall, rss = gnu_time(tfile)
            if ranks > 1:  # what the node needs: the sum of the ranks' peaks
                rss = sum(gnu_time(p)[1] for p in sorted(d.glob(f"{tag}.time.rank*")))
            if runner.startswith("phew"):
                m = json.loads((d / f"{tag}.h5.json").read_text())
                if m["summary"]["n_particles"] != n:
                    sys.exit(f"{d / tag}: {m['summary']['n_particles']} particles, expected {n}")
                open_s, read_s = m["timings"]["open"], m["timings"]["read"]
            else:
                y = json.loads((d / f"{tag}.json").read_text())
                if y["particles"] != n:
                    sys.exit(f"{d / tag}: yt read {y['particles']} particles, expected {n}")
                open_s, read_s = y["open_s"], y["read_s"]
            runs.append({"wall_s": wall, "peak_rss_mib": rss, "open_s": open_s, "read_s": read_s})
        if not runs:
            continue
        best = min(runs, key=lambda r: r["read_s"])
        rows.append({"case": case, "runner": runner, "ranks": ranks, "particles": n, **best,
                     "mparticles_per_s_read": n / best["read_s"] / 1e6,
                     "mparticles_per_s_open_read": n / (best["open_s"] + best["read_s"]) / 1e6,
                     "peak_rss_mib_max_of_runs": max(r["peak_rss_mib"] for r in runs), "runs": runs})

for r in rows:
    base = {k: next((b for b in rows if b["case"] == r["case"] and b["runner"] == k and b["ranks"] == 1), None)
            for k in ("yt ramses", "phew hdf5")}
    for k, b in base.items():
        key = "x_" + k.replace(" ", "_") + "_read"
        r[key] = r["mparticles_per_s_read"] / b["mparticles_per_s_read"] if b else None

(out / "ramses_bench.json").write_text(json.dumps({"repeat": repeat, "rows": rows}, indent=2) + "\n")
head = ("case", "runner", "ranks", "particles", "open s", "read s", "Mp/s read", "Mp/s open+read", "wall s",
        "peak RSS MiB", "x yt", "x phew hdf5 1")
fmt = "{:<10} {:<12} {:>5} {:>10} {:>7} {:>7} {:>9} {:>14} {:>7} {:>12} {:>6} {:>13}"
print(f"\nparticles read per second (fastest of {repeat}; phew = cic-project's read phase, yt = positions + masses)")
print(fmt.format(*head))
x = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
for r in rows:
    print(fmt.format(r["case"], r["runner"], r["ranks"], f"{r['particles']:,}", f"{r['open_s']:.3f}", f"{r['read_s']:.3f}",
                     f"{r['mparticles_per_s_read']:.2f}", f"{r['mparticles_per_s_open_read']:.2f}", f"{r['wall_s']:.2f}",
                     f"{r['peak_rss_mib']:.0f}", x(r["x_yt_ramses_read"]), x(r["x_phew_hdf5_read"])))
print(f"\nwrote {out / 'ramses_bench.json'}")
EOF
