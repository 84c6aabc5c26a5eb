// Every way the ranks can cut a grid into blocks, for tests that must hold on all of them: the lattice
// mpi::BlockDecomposition would choose, then every lattice px x py x pz of exactly `ranks` that fits the
// grid (slabs, pencils and bricks along each axis).
#pragma once

#include <phew/mpi/blocks.hpp>

#include <vector>

namespace phew::test {

inline std::vector<mpi::BlockDecomposition> every_lattice(const mpi::Extent3& shape, int ranks) {
  std::vector<mpi::BlockDecomposition> out{mpi::BlockDecomposition(shape, ranks)};
  for (int px = 1; px <= ranks; ++px)
    for (int py = 1; px * py <= ranks; ++py) {
      if (ranks % (px * py) != 0) continue;
      const int pz = ranks / (px * py);
      if (px > shape[0] || py > shape[1] || pz > shape[2]) continue;
      out.push_back(mpi::BlockDecomposition({mpi::SlabDecomposition(shape[0], px), mpi::SlabDecomposition(shape[1], py),
                                             mpi::SlabDecomposition(shape[2], pz)}));
    }
  return out;
}

}  // namespace phew::test
