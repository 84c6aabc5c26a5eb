// unbind's inputs mapped to its stage's: the objects of clumps.h5 (level-0 clumps with their hierarchy)
// or of deblend's peaks.h5, their key saddles (--saddle), and the particles of each object.
#pragma once

#include "unbind.hpp"

#include <phew/grid/geometry.hpp>
#include <phew/tool/cells_input.hpp>
#include <phew/particles/cell_members.hpp>
#include <phew/particles/snapshot.hpp>
#include <phew/unbind/catalogue.hpp>

#include <cstdint>
#include <vector>

namespace phew::tools {

struct UnbindInput {
  bool from_peaks = false;                               // deblend's peaks.h5: each peak its own object, no hierarchy
  grid::GridMeta grid;                                   // the grid the objects were found on
  mesh::CellSpace space = mesh::CellSpace::uniform({});  // its cells (uniform or adaptive)
  std::vector<unbind::ObjectRow> objects;
  std::vector<int> types;  // the particle types to read
};

// Reads the objects and checks the snapshot against their grid and provenance chain. Collective.
UnbindInput read_unbind_input(const UnbindOptions& opt, const particles::SnapshotInfo& info, tool::Context& ctx);
// --saddle: each clump's distance to its key saddle, from the patches.h5 the clumps were made from.
void add_key_saddles(const UnbindOptions& opt, UnbindInput& in, tool::Context& ctx);
// This rank's share of the objects' particles: by particle ID for peaks, by test cell for clumps (each
// rank a run of cells balanced by test cells, the snapshot read a chunk at a time). Collective.
std::vector<particles::CellMember> read_unbind_members(const UnbindOptions& opt, const UnbindInput& in,
                                                       particles::SnapshotReader& reader, int threads,
                                                       tool::Context& ctx);

}  // namespace phew::tools
