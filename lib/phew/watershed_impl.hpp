// Template definitions for watershed.hpp.
#pragma once

#include <algorithm>
#include <unordered_map>

namespace phew {

template <WatershedMesh Mesh>
Segmentation segment(const Mesh& mesh, double threshold, const mpi::Comm& comm) {
  const std::size_t nslots = mesh.slots();
  Segmentation out;

  // 1. Test cells and their densest neighbour (the earliest in canonical order, if before the cell).
  struct Test {
    double density;
    std::int64_t cell;
    std::size_t slot;
  };
  std::vector<Test> tests;
  for (std::size_t s = mesh.first_local(); s < mesh.end_local(); ++s)
    if (mesh.density(s) > threshold) tests.push_back({mesh.density(s), mesh.global_index(s), s});
  std::sort(tests.begin(), tests.end(),
            [](const Test& a, const Test& b) { return denser(a.density, a.cell, b.density, b.cell); });

  // 2. One pass in canonical order: a cell takes the root of its densest neighbour, which comes earlier
  // and so is done already when it is local. A chain that leaves the slab ends, for now, at the ghost
  // cell where it leaves (an "exit"); its label arrives from the owner in the rounds below.
  // Until then label[s] holds root slot + 1 (a local peak or an exit ghost), so no second per-cell
  // array is needed (the memory budget is 16 bytes per cell beyond the density).
  out.label.assign(nslots, 0);
  std::vector<PeakCell> local_peaks;
  for (const Test& t : tests) {
    std::size_t best = t.slot;
    double best_rho = t.density;
    std::int64_t best_cell = t.cell;
    mesh.for_each_neighbour(t.slot, [&](std::size_t n) {
      const double rho = mesh.density(n);
      const std::int64_t c = mesh.global_index(n);
      if (denser(rho, c, best_rho, best_cell)) {
        best = n;
        best_rho = rho;
        best_cell = c;
      }
    });
    if (best == t.slot) local_peaks.push_back({t.density, t.cell});
    out.label[t.slot] = mesh.is_local(best) && best != t.slot ? out.label[best] : static_cast<std::int64_t>(best) + 1;
  }
  out.test_cells = comm.sum<std::uint64_t>(tests.size());
  std::vector<std::pair<std::size_t, std::size_t>> boundary;  // (slot, root slot) of test cells others see
  for (const Test& t : tests)
    if (mesh.is_boundary(t.slot)) boundary.emplace_back(t.slot, static_cast<std::size_t>(out.label[t.slot] - 1));
  tests = std::vector<Test>();

  // 3. Canonical peak IDs from the global list of peaks.
  out.peaks = comm.all_gatherv<PeakCell>(local_peaks);
  std::sort(out.peaks.begin(), out.peaks.end(),
            [](const PeakCell& a, const PeakCell& b) { return denser(a.density, a.cell, b.density, b.cell); });
  std::unordered_map<std::int64_t, std::int64_t> id_of_cell;
  id_of_cell.reserve(out.peaks.size());
  for (std::size_t i = 0; i < out.peaks.size(); ++i) id_of_cell[out.peaks[i].cell] = static_cast<std::int64_t>(i) + 1;
  auto resolve = [&](std::size_t root) -> std::int64_t {
    return mesh.is_local(root) ? id_of_cell.at(mesh.global_index(root)) : out.label[root];
  };

  // 4. Rounds: cells that other ranks see as ghosts get their label (0 while their exit is unresolved),
  // ghosts are updated, until no ghost label changes anywhere; a chain crossing k slabs takes k+1 rounds.
  std::vector<std::int64_t> ghosts_before;
  for (;;) {
    for (const auto& [slot, root] : boundary) out.label[slot] = resolve(root);
    ghosts_before.assign(out.label.begin(), out.label.begin() + static_cast<std::ptrdiff_t>(mesh.first_local()));
    ghosts_before.insert(ghosts_before.end(), out.label.begin() + static_cast<std::ptrdiff_t>(mesh.end_local()),
                         out.label.end());
    mesh.update_ghosts(out.label, comm);
    ++out.rounds;
    const bool changed =
        !std::equal(ghosts_before.begin(), ghosts_before.begin() + static_cast<std::ptrdiff_t>(mesh.first_local()),
                    out.label.begin()) ||
        !std::equal(ghosts_before.begin() + static_cast<std::ptrdiff_t>(mesh.first_local()), ghosts_before.end(),
                    out.label.begin() + static_cast<std::ptrdiff_t>(mesh.end_local()));
    if (!comm.any(changed)) break;
  }
  for (std::size_t s = mesh.first_local(); s < mesh.end_local(); ++s)
    if (out.label[s] > 0 && !mesh.is_boundary(s)) out.label[s] = resolve(static_cast<std::size_t>(out.label[s] - 1));
  return out;
}

}  // namespace phew
