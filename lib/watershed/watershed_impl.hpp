// Template definitions for watershed.hpp.
#pragma once

#include <phew/core/threads.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/slab.hpp>
#include <phew/mpi/sort.hpp>

#include <algorithm>
#include <cstdlib>

namespace phew::watershed {

template <WatershedMesh Mesh>
Segmentation segment(const Mesh& mesh, double threshold, const mpi::Comm& comm, int threads) {
  const std::size_t nslots = mesh.slots();
  Segmentation out;

  // 0. The test cells (density strictly above the threshold), ghosts too: a ghost is a test cell on both
  // of its ranks, so the ghost exchanges below carry test-cell labels only.
  // Threads take whole words of the bitmap, so no two write one word.
  out.tests = grid::CellSet(nslots);
  core::parallel_for(threads, (nslots + 63) / 64, kSlotsPerChunk / 64, [&](std::size_t w0, std::size_t w1, int) {
    for (std::size_t s = w0 * 64; s < std::min(w1 * 64, nslots); ++s)
      if (mesh.density(s) > threshold) out.tests.insert(s);
  });
  out.tests.finish();
  auto member = [&](std::size_t s) { return out.tests.rank(s); };

  // 1. The densest neighbour of each local test cell (the earliest in canonical order, if before the
  // cell), found in memory order, which is much kinder to the caches than density order. The neighbour
  // is denser than the threshold too, so it is a test cell. Threads take chunks of slots; each test
  // cell has its own row (its place among the members), so the rows do not depend on the threads.
  struct Test {
    std::size_t slot, parent;
  };
  const std::size_t first_member = member(mesh.first_local());
  std::vector<Test> tests(member(mesh.end_local()) - first_member);
  core::parallel_for(
      threads, mesh.end_local() - mesh.first_local(), kSlotsPerChunk, [&](std::size_t b, std::size_t e, int) {
        out.tests.for_each(mesh.first_local() + b, mesh.first_local() + e, [&](std::size_t s, std::size_t m) {
          const double rho = mesh.density(s);
          const std::int64_t cell = mesh.global_index(s);
          std::size_t best = s;
          double best_rho = rho;
          std::int64_t best_cell = cell;
          mesh.for_each_neighbour(s, [&](std::size_t n) {
            // Denser, or as dense and earlier in canonical order: chosen by conditional moves, not by
            // branches (whether a neighbour is denser goes either way at random).
            const double r = mesh.density(n);
            const std::int64_t c = mesh.global_index(n);
            const bool better = (!(r < best_rho)) & ((r > best_rho) | (c < best_cell));
            const std::size_t take = std::size_t{0} - static_cast<std::size_t>(better);  // all ones or none
            best ^= (best ^ n) & take;
            best_cell ^= (best_cell ^ c) & static_cast<std::int64_t>(take);
            best_rho = std::max(best_rho, r);  // `better` means r >= best_rho (densities are finite: read checks)
          });
          tests[m - first_member] = {s, best};
        });
      });

  // 2. Each cell's root, without ordering the cells: a chain of densest neighbours is followed from a
  // cell not yet resolved until it reaches a peak (its own densest neighbour), a cell resolved before,
  // or a ghost (the chain leaves the rank's run: an "exit", whose label arrives from the owner in the
  // rounds below); every cell on the way takes that root. A chain only climbs in the canonical order,
  // so it ends, and the roots are the forest's, whatever order the cells are taken in. Until then a
  // label holds root slot + 1 (a local peak or an exit ghost), so no second array is needed.
  // On threads, each takes a run of test cells and follows chains only within it: a chain that leaves
  // the run stops there, its cells pending with -(slot + 1) of the cell where it left; once every run
  // is done, the pending cells follow those ends (reading only) to their roots. One thread is one run:
  // nothing is pending.
  out.label.assign(out.tests.size(), 0);
  const std::size_t n_tests = tests.size();
  const auto index_of = [&](std::size_t s) { return member(s) - first_member; };
  std::int64_t* label = out.label.data() + first_member;  // of the local test cells, by index in `tests`
  const std::size_t run =
      threads <= 1 ? std::max<std::size_t>(n_tests, 1) : n_tests / (8 * static_cast<std::size_t>(threads)) + 1;
  core::parallel_for(threads, n_tests, run, [&](std::size_t c0, std::size_t c1, int) {
    std::vector<std::size_t> path;
    for (std::size_t i = c0; i < c1; ++i) {
      if (label[i] != 0) continue;
      path.clear();
      std::size_t k = i;
      std::int64_t root = 0;
      for (;;) {
        path.push_back(k);
        const std::size_t up = tests[k].parent;
        if (up == tests[k].slot || !mesh.is_local(up)) {
          root = static_cast<std::int64_t>(up) + 1;
          break;
        }
        const std::size_t ku = index_of(up);
        if (ku < c0 || ku >= c1) {  // another thread's run: pending
          root = -(static_cast<std::int64_t>(up) + 1);
          break;
        }
        if (label[ku] != 0) {
          root = label[ku];
          break;
        }
        k = ku;
      }
      for (const std::size_t q : path) label[q] = root;
    }
  });
  if (threads > 1) {
    std::vector<std::vector<std::pair<std::size_t, std::int64_t>>> resolved(static_cast<std::size_t>(threads));
    core::parallel_for(threads, n_tests, kSlotsPerChunk, [&](std::size_t b, std::size_t e, int thread) {
      for (std::size_t i = b; i < e; ++i) {
        std::int64_t l = label[i];
        while (l < 0) l = label[index_of(static_cast<std::size_t>(-l - 1))];
        if (l != label[i]) resolved[static_cast<std::size_t>(thread)].emplace_back(i, l);
      }
    });
    core::parallel_for(threads, resolved.size(), 1, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t t = b; t < e; ++t)
        for (const auto& [i, l] : resolved[t]) label[i] = l;
    });
  }
  // The local peaks, the test cells other ranks see (with their root slot) and the non-peak interior
  // test cells (resolved after the rounds): found on threads a run of cells at a time, then joined in
  // run order, so in slot order whatever the threads.
  struct Found {
    std::vector<PeakCell> peaks;
    std::vector<std::size_t> peak_slots;
    std::vector<std::pair<std::size_t, std::size_t>> boundary;
    std::vector<std::size_t> interior;
  };
  std::vector<Found> found((n_tests + kSlotsPerChunk - 1) / kSlotsPerChunk);
  core::parallel_for(threads, n_tests, kSlotsPerChunk, [&](std::size_t b, std::size_t e, int) {
    Found& f = found[b / kSlotsPerChunk];
    for (std::size_t i = b; i < e; ++i) {
      const Test& t = tests[i];
      const auto root = static_cast<std::size_t>(label[i] - 1);
      if (t.parent == t.slot) {
        f.peaks.push_back({mesh.density(t.slot), mesh.global_index(t.slot)});
        f.peak_slots.push_back(t.slot);
      }
      if (mesh.is_boundary(t.slot))
        f.boundary.emplace_back(t.slot, root);
      else if (root != t.slot)
        f.interior.push_back(t.slot);
    }
  });
  out.test_cells = comm.sum<std::uint64_t>(tests.size());
  tests = std::vector<Test>();
  std::vector<PeakCell> local_peaks;
  std::vector<std::size_t> pk_slot;                           // slot of each local peak
  std::vector<std::pair<std::size_t, std::size_t>> boundary;  // (slot, root slot) of test cells others see
  std::vector<std::size_t> interior;
  for (Found& f : found) {
    local_peaks.insert(local_peaks.end(), f.peaks.begin(), f.peaks.end());
    pk_slot.insert(pk_slot.end(), f.peak_slots.begin(), f.peak_slots.end());
    boundary.insert(boundary.end(), f.boundary.begin(), f.boundary.end());
    interior.insert(interior.end(), f.interior.begin(), f.interior.end());
    f = Found();
  }

  // 3. Canonical peak IDs: the peaks sorted over the ranks (densest first, then by cell), numbered in
  // that order; each learns its ID back, and the owners of blocks of IDs keep the rows. No rank holds
  // every peak: the table grows with the structures, not with the ranks.
  struct Ranked {
    PeakCell peak;
    std::int32_t rank;
    std::uint32_t index;  // among its rank's local peaks
  };
  std::vector<Ranked> ranked;
  ranked.reserve(local_peaks.size());
  for (std::size_t i = 0; i < local_peaks.size(); ++i)
    ranked.push_back({local_peaks[i], comm.rank(), static_cast<std::uint32_t>(i)});
  ranked = mpi::sort(comm, std::move(ranked), [](const Ranked& a, const Ranked& b) {
    return denser(a.peak.density, a.peak.cell, b.peak.density, b.peak.cell);
  });
  const std::vector<std::uint64_t> sorted_counts = comm.all_gather<std::uint64_t>(ranked.size());
  std::uint64_t first_sorted = 0;
  for (int r = 0; r < comm.rank(); ++r) first_sorted += sorted_counts[static_cast<std::size_t>(r)];
  for (const std::uint64_t c : sorted_counts) out.n_peaks += c;
  const mpi::SlabDecomposition owners(std::max<std::int64_t>(1, static_cast<std::int64_t>(out.n_peaks)), comm.size());
  out.first_peak = owners.begin(comm.rank()) + 1;
  struct Numbered {
    std::int64_t id;
    PeakCell peak;
    std::int32_t rank;
    std::uint32_t index;
  };
  std::vector<Numbered> numbered;
  numbered.reserve(ranked.size());
  for (std::size_t k = 0; k < ranked.size(); ++k)
    numbered.push_back(
        {static_cast<std::int64_t>(first_sorted + k) + 1, ranked[k].peak, ranked[k].rank, ranked[k].index});
  ranked = std::vector<Ranked>();
  // Local peaks learn their IDs: their label then holds -ID, which marks them apart from the root
  // pointers (slot + 1) of the other test cells.
  for (const Numbered& p : mpi::route(comm, numbered, [](const Numbered& n) { return n.rank; }))
    out.label[member(pk_slot[p.index])] = -p.id;
  std::vector<Numbered> owned = mpi::route(comm, numbered, [&](const Numbered& n) { return owners.owner(n.id - 1); });
  std::sort(owned.begin(), owned.end(), [](const Numbered& a, const Numbered& b) { return a.id < b.id; });
  out.own_peaks.reserve(owned.size());
  for (const Numbered& p : owned) out.own_peaks.push_back(p.peak);
  auto resolve = [&](std::size_t root) -> std::int64_t {
    // A local root is a peak: -ID until labelled, ID once a boundary round has labelled it.
    const std::int64_t l = out.label[member(root)];
    return mesh.is_local(root) ? std::abs(l) : l;
  };

  // 4. Rounds: cells that other ranks see as ghosts get their label (0 while their exit is unresolved),
  // ghosts are updated, until no ghost label changes anywhere; a chain crossing k blocks takes k+1 rounds.
  // The ghosts' labels are the first and the last members (the ghost planes come first and last).
  const auto low_end = static_cast<std::ptrdiff_t>(member(mesh.first_local()));
  const auto high_begin = static_cast<std::ptrdiff_t>(member(mesh.end_local()));
  std::vector<std::int64_t> ghosts_before;
  for (;;) {
    for (const auto& [slot, root] : boundary) out.label[member(slot)] = resolve(root);
    ghosts_before.assign(out.label.begin(), out.label.begin() + low_end);
    ghosts_before.insert(ghosts_before.end(), out.label.begin() + high_begin, out.label.end());
    mesh.update_ghost_members(out.tests, out.label, comm);
    ++out.rounds;
    const bool changed =
        !std::equal(ghosts_before.begin(), ghosts_before.begin() + low_end, out.label.begin()) ||
        !std::equal(ghosts_before.begin() + low_end, ghosts_before.end(), out.label.begin() + high_begin);
    if (!comm.any(changed)) break;
  }
  // Interior cells read their root (a peak, holding -ID, or a ghost, holding its ID); boundary peaks
  // already hold their ID; then the interior peaks' -ID becomes ID.
  // On threads: an interior cell's root is a peak or a ghost, never another interior cell.
  core::parallel_for(threads, interior.size(), kSlotsPerChunk, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t i = b; i < e; ++i) {
      const std::size_t s = interior[i];
      out.label[member(s)] = resolve(static_cast<std::size_t>(out.label[member(s)] - 1));
    }
  });
  for (std::size_t s : pk_slot) out.label[member(s)] = std::abs(out.label[member(s)]);
  out.peak_slots = std::move(pk_slot);
  return out;
}

}  // namespace phew::watershed
