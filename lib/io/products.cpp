#include <phew/io/products.hpp>

#include <phew/io/bound_file.hpp>
#include <phew/io/clumps_file.hpp>
#include <phew/io/maps_file.hpp>
#include <phew/io/patches_file.hpp>
#include <phew/io/peaks_file.hpp>
#include <phew/io/tree_file.hpp>
#include <phew/io/voters_file.hpp>

#include <algorithm>

namespace phew::io {
namespace {

// Rows [0, n) of a table, a chunk at a time (bounded memory however large it is).
template <typename Row>
void read_all(const File& f, const Table<Row>& table, const std::string& group) {
  if (!f.has(group)) return;  // a missing table: the product's own reader says which
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
  const std::uint64_t n = table.size(f, group);
  for (std::uint64_t b = 0; b < n; b += kChunk) table.read(f, group, b, std::min(kChunk, n - b));
}

}  // namespace

std::vector<DeclaredTable> declared_tables() {
  return {
      {"patches.h5", "/peaks", patch_peak_table().info()},
      {"patches.h5", "/saddles", saddle_table().info()},
      {"clumps.h5", "/peaks", merged_peak_table().info()},
      {"clumps.h5", "/clumps", clump_table().info()},
      {"clumps.h5", "/halos", halo_table().info()},
      {"clumps.h5", "/hierarchy", hierarchy_table().info()},
      {"peaks.h5", "/peaks", peak_table().info()},
      {"peaks.h5", "/particles", peak_member_table().info()},
      {"voters.h5", "/voters", voter_table().info()},
      {"voters.h5", "/peaks", voter_peak_table().info()},
      {"bound.h5", "/objects", bound_object_table().info()},
      {"bound.h5", "/objects", bound_type_table().info()},
      {"bound.h5", "/particles", bound_particle_table().info()},
      {"bound.h5", "/most_bound", most_bound_table().info()},
      {"tree.h5", "/peaks", tree_peak_table().info()},
      {"tree.h5", "/snapshots", tree_snapshot_table().info()},
      {"tree.h5", "/state", state_peak_table().info()},
      {"tree.h5", "/state", state_member_table().info()},
      {"tree.h5", "/state", state_voter_table().info()},
      {"tree.h5", "/state", grave_table().info()},
      {"tree.h5", "/state", artefact_table().info()},
      {"maps.h5", "/maps", map_table().info()},
  };
}

void check_product(const std::string& path, const std::string& kind) {
  const File f = File::open_read(path);
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;
  if (kind == "patches") {
    const std::uint64_t peaks = patch_peak_table().size(f, "/peaks");
    for (std::uint64_t b = 0; b < peaks; b += kChunk) read_patch_peaks(f, b, std::min(kChunk, peaks - b));
    check_saddles_below_peaks(f);  // with the saddles' own checks
  } else if (kind == "clumps") {
    read_merged_peaks(f);
    read_clumps(f);
    read_all(f, halo_table(), "/halos");
    read_all(f, hierarchy_table(), "/hierarchy");
  } else if (kind == "peaks") {
    read_peak_rows(f);
    read_all(f, peak_member_table(), "/particles");
  } else if (kind == "voters") {
    read_voter_rows(f);
  } else if (kind == "bound") {
    read_bound_objects(f);
    read_bound_types(f);
    read_all(f, bound_particle_table(), "/particles");
    read_all(f, most_bound_table(), "/most_bound");
  } else if (kind == "tree") {
    read_tree(path);
  }
}

}  // namespace phew::io
