#!/usr/bin/env bash
# The cosmo-box example: a clustered cosmological box made by synth-particles (or a snapshot you give)
# through the whole chain, then the pictures.
# Usage: examples/cosmo-box/run.sh [OUTDIR] [SNAPSHOT]      (default OUTDIR: example-output/cosmo-box)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-example-output/cosmo-box}
export PHEW_BIN=${PHEW_BIN:-$root/build/bin}
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
mkdir -p "$out/snaps" "$out/pictures"
if [[ $# -ge 2 ]]; then
  ln -sf "$(cd "$(dirname "$2")" && pwd)/$(basename "$2")" "$out/snaps/snap_000.hdf5"
elif [[ ! -f $out/snaps/snap_000.hdf5 ]]; then
  # scene.json: 128^3 particles displaced from a lattice by the Zel'dovich approximation (CDM,
  # sigma8 0.8) in a 50 Mpc/h box at z = 0, plus eight NFW haloes (1e13-3e14 Msun/h) with subhaloes.
  "$PHEW_BIN/synth-particles" "$here/scene.json" -o "$out/snaps/snap_000.hdf5" -q
fi
sed "s|^snapshots:.*|snapshots: \"$out/snaps/snap_*.hdf5\"|" "$here/config.yaml" >"$out/config.yaml"
"$root/workflows/pipeline.sh" "$out/snaps/snap_*.hdf5" "$out/run" --config "$out/config.yaml"

run=$out/run/snap_000
plot=("/usr/bin/python3" "$root/examples/phewplot.py")
"${plot[@]}" slice "$run/clumps.h5" "$run/grid.h5" "$out/pictures/slice.png" --thickness 64
"${plot[@]}" massfunction "$run/clumps.h5" "$out/pictures/massfunction.png"
"${plot[@]}" dendrogram "$run/clumps.h5" "$out/pictures/dendrogram.png"
"${plot[@]}" maps "$out/run/maps.h5" "$out/pictures/maps.png"
/usr/bin/python3 "$root/examples/summarize_grid.py" "$run/grid.h5"
/usr/bin/python3 - "$run/clumps.h5" <<'PY'
import h5py, sys
c = h5py.File(sys.argv[1])
print(f"  {len(c['peaks/id'])} peaks -> {len(c['clumps/id'])} level-0 clumps -> {len(c['halos/id'])} haloes")
PY
# The ten biggest haloes after unbinding (workflows' unbind key, on by default): bound.h5 (docs/tools/unbind.md).
if [[ -f $run/bound.h5 ]]; then
  "${plot[@]}" vmaxfunction "$run/bound.h5" "$out/pictures/vmaxfunction.png" --print-rows 0 >/dev/null
  /usr/bin/python3 - "$run/bound.h5" <<'PY'
import h5py, sys, numpy as np
f = h5py.File(sys.argv[1]); o = f["objects"]
mu, vu = o["mass"].attrs["units"], o["vmax"].attrs["units"].split(" (")[0]
haloes = np.flatnonzero(o["parent"][...] == 0)
print(f"  the ten biggest haloes after unbinding (bound mass and Mvir in {mu}, Vmax in {vu}):")
print("      id     bound      Mvir   Vmax  c_Klypin  subhaloes")
n_sub = np.bincount(o["parent"][...], minlength=int(o["id"][...].max()) + 1)
for i in haloes[np.argsort(o["mass_inclusive"][...][haloes], kind="stable")[::-1][:10]]:
    print(f"  {o['id'][i]:6d} {o['mass_inclusive'][i]:9.4g} {o['mvir'][i]:9.4g} {o['vmax'][i]:6.0f} "
          f"{o['concentration_klypin'][i]:9.1f} {n_sub[o['id'][i]]:10d}")
PY
fi
echo "pictures: $out/pictures/{slice,massfunction,dendrogram,maps,vmaxfunction}.png" >&2
