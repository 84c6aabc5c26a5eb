#!/usr/bin/env bash
# Checks the layering rules of docs/architecture.md on the sources, so that they cannot erode:
#   1. MPI is called only in lib/mpi (tools and stages use mpi::Comm, route, agree, ...);
#   2. HDF5 is included and called only in lib/io (everything else goes through io::File);
#   3. no HDF5 object path ("/peaks", "/cells/clump") outside lib/io and the snapshot formats in
#      lib/snapshot: a product's layout is written down once, in its lib/io file;
#   4. a position is wrapped into a periodic box only by lib/grid (wrap_into, wrap_position): no
#      fmod / remainder elsewhere;
#   5. 3-D indices are folded only by lib/grid's linear_index (or GridGeometry::linear): no inline
#      (i * n1 + j) * n2 + k elsewhere;
#   6. a phew header is included as <phew/<module>/<file>.hpp>, as an installed package has it, never
#      quoted ("core/error.hpp", "../lib/io/h5.hpp"): in lib, tools, tests, bench and examples. Quoted
#      includes remain for a tool's or a test's own headers ("cic_project.hpp", "temp_dir.hpp");
#   7. the code of lib/<module>/ is in namespace phew::<module> (or one nested in it: phew::core::log),
#      and the tools' code in phew::tools: a `namespace phew {` or another module's namespace is refused;
#   8. no algorithm includes <phew/io/...>: the stages take rows (lib/model), spans and params and never
#      see a file, so a new stage cannot grow a path or an HDF5 handle. Only lib/io itself, lib/tool (the
#      tool frame writes the outputs and their manifests), and the snapshot formats of lib/snapshot (the
#      files' side of the particles, through io::File, the one HDF5 wrapper) include it; tools/ map files
#      to the stages' inputs;
#   9. no algorithm includes a snapshot format (<phew/snapshot/...>): the algorithms on particles take a
#      particles::SnapshotReader or a ParticleSet; lib/tool opens a snapshot, and synth-particles writes one;
#  10. comments say why, not when: no issue numbers in the code and tests (they belong in commits);
#  11. units are named once: no "km/s" literal outside lib/core/units.hpp;
#  12. one name per thing: no type name defined at namespace scope in two modules of lib/ or tools/;
#  13. thin tools: every tools/*/*.cpp at most 250 code lines, every run_* at most 50 lines.
#  14. bits are counted by grid::bits_set: std::popcount on the x86-64 baseline Debian builds for (no
#      popcnt instruction) is a call into libgcc's table per use.
#
#   tests/build/code_rules.sh [project-root]
#
# Exit 0 and "code rules hold" when they do, 1 listing every offending line if not.
set -euo pipefail
export LC_ALL=C

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$root"
status=0

# check RULE PATTERN ALLOWED_PREFIX...: lines of lib/ and tools/ sources matching PATTERN (extended regex),
# outside the allowed folders and outside // comments, are violations.
check() {
  local rule=$1 pattern=$2
  shift 2
  local hits
  hits=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.cpp.in' "$pattern" lib tools |
    grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
  for allowed in "$@"; do
    hits=$(printf '%s\n' "$hits" | grep -vE "^$allowed" || true)
  done
  if [[ -n $hits ]]; then
    echo "code_rules.sh: $rule:" >&2
    printf '%s\n' "$hits" >&2
    status=1
  fi
}

check "MPI is called only in lib/mpi" '\bMPI_[A-Z][A-Za-z_]*[[:space:]]*\(' lib/mpi/
check "HDF5 only in lib/io" '<hdf5\.h>|\bH5[A-Z][a-z]*[A-Za-z_]*[[:space:]]*\(' lib/io/
check "HDF5 object paths only in lib/io and the snapshot formats (\"/h\" is a unit)" '"/[A-Za-z_]+(/[A-Za-z_0-9]+)*"' \
  lib/io/ lib/snapshot/ 'lib/core/memory.cpp:[0-9]+:.*"/proc/' '[^:]+:[0-9]+:.*"/h"'
check "bits counted by grid::bits_set, not std::popcount (a libgcc call on the x86-64 baseline)" \
  '\b(std::popcount|__builtin_popcount[a-z]*)[[:space:]]*\(' lib/grid/cell_set.hpp
check "periodic wraps only in lib/grid" '\b(std::)?(fmod|remainder)[[:space:]]*\(' lib/grid/

name='[A-Za-z_][A-Za-z_0-9.]*(\[[^]]*\])?'
check "3-D index folds only through linear_index" "\\(\\s*$name\\s*\\*\\s*$name\\s*\\+[^;]*\\)\\s*\\*\\s*$name\\s*\\+" lib/grid/

modules=$(cd lib && ls -d */ | tr -d / | paste -sd'|')
hits=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.cpp.in' --include='*.h' \
  "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([./]*/)?(lib/)?($modules)/" lib tools tests bench examples || true)
if [[ -n $hits ]]; then
  echo "code_rules.sh: phew headers are included as <phew/<module>/<file>.hpp>:" >&2
  printf '%s\n' "$hits" >&2
  status=1
fi

check "algorithms do not include lib/io (they take lib/model rows)" '#[[:space:]]*include[[:space:]]*<phew/io/' \
  lib/io/ lib/tool/ lib/snapshot/ tools/
check "algorithms do not include a snapshot format (lib/snapshot)" '#[[:space:]]*include[[:space:]]*<phew/snapshot/' \
  lib/snapshot/ lib/tool/ tools/

# namespace_rule DIR NAMESPACE: every `namespace phew...` opened in DIR is NAMESPACE or nested in it.
namespace_rule() {
  local hits
  hits=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.cpp.in' '^[[:space:]]*namespace[[:space:]]+phew\b' "$1" |
    grep -vE "namespace[[:space:]]+$2(::[A-Za-z_][A-Za-z_0-9]*)*[[:space:]]*\{" || true)
  if [[ -n $hits ]]; then
    echo "code_rules.sh: the code of $1 is in namespace $2:" >&2
    printf '%s\n' "$hits" >&2
    status=1
  fi
}
for module in $(cd lib && ls -d */ | tr -d /); do
  namespace_rule "lib/$module" "phew::$module"
done
namespace_rule tools "phew::tools"

hits=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.py' --include='*.bats' --include='*.sh' \
  '[Ii]ssues? ?#?[0-9]+' lib tools tests bench/fuzz | grep -vE 'ompi#|open-mpi/ompi' || true)
if [[ -n $hits ]]; then
  echo "code_rules.sh: issue numbers in code or test comments (put them in the commit message):" >&2
  printf '%s\n' "$hits" >&2
  status=1
fi

hits=$(grep -rnE --include='*.cpp' --include='*.hpp' '"\(?km/s' lib tools | grep -v '^lib/core/units.hpp:' |
  grep -vE '^[^:]+:[0-9]+:[^"]*//' || true)  # a "km/s" after // is a comment's
if [[ -n $hits ]]; then
  echo "code_rules.sh: km/s is named once (core::units):" >&2
  printf '%s\n' "$hits" >&2
  status=1
fi

# Types at namespace scope (a line starting with struct/class/enum class NAME), by module.
dups=$(grep -rnoE --include='*.cpp' --include='*.hpp' '^(struct|class|enum class) [A-Z][A-Za-z0-9_]*( |\{|$)' lib tools |
  sed -E 's#^(lib|tools)/([^/]+)/[^:]*:[0-9]+:(struct|class|enum class) ([A-Za-z0-9_]+).*#\4 \1/\2#' | sort -u |
  awk '{n[$1]++; m[$1] = m[$1] " " $2} END {for (k in n) if (n[k] > 1) print k ":" m[k]}')
if [[ -n $dups ]]; then
  echo "code_rules.sh: a type name defined in two modules:" >&2
  printf '%s\n' "$dups" >&2
  status=1
fi

for f in tools/*/*.cpp; do
  lines=$(grep -cvE '^[[:space:]]*(//.*)?$' "$f" || true)
  if ((lines > 250)); then
    echo "code_rules.sh: $f has $lines code lines (at most 250: move a part into its own file or lib/)" >&2
    status=1
  fi
  long=$(awk '/^[A-Za-z].* run_[a-z_]*\(.*\{$/ {n = 0; name = $0; inside = 1} inside {n++}
              inside && /^}/ {if (n > 50) print FILENAME ": " n " lines: " name; inside = 0}' "$f")
  if [[ -n $long ]]; then
    echo "code_rules.sh: a run_* longer than 50 lines (the stage wiring only): $long" >&2
    status=1
  fi
done

if [[ $status -eq 0 ]]; then echo "code rules hold"; fi
exit $status
