// Uniform volume decomposition with ghost zones (Rangel et al. Sec. IV B): the domain is cut into
// equal blocks, one per rank, and each rank also holds the particles within `ghost` of its block,
// so every field whose centre lies in its block can be computed without communication.
#pragma once

#include <phew/grid/geometry.hpp>
#include <phew/mpi/comm.hpp>

#include <array>
#include <span>
#include <vector>

namespace phew::dtfe {

class VolumeDecomposition {
 public:
  // Blocks over `domain` (a periodic box, or an open one holding the particles) for `ranks` ranks. An axis is cut only when its ghost zones would not
  // cover it anyway (2 ghost < extent); the cut minimises the largest block with its ghosts.
  VolumeDecomposition(const grid::Box& domain, const std::array<double, 3>& ghost, int ranks);

  const std::array<int, 3>& dims() const { return dims_; }
  const grid::Box& domain() const { return domain_; }
  // The rank whose block holds x (wrapped into a periodic domain, clamped into a closed one).
  int owner(const std::array<double, 3>& x) const;
  // Every rank whose block with its ghost zone holds x or one of its periodic images.
  void needing(const double* x, std::vector<int>& ranks) const;

 private:
  grid::Box domain_;
  std::array<double, 3> ghost_;
  std::array<int, 3> dims_{1, 1, 1};
};

struct GhostedParticles {
  std::vector<double> position;  // [n][3], as read (wrapped in a periodic box)
  std::vector<double> mass;
};

// Sends each of this rank's particles (`mine`) to every rank that needs it (its block's owner and the
// ranks whose ghost zones hold it). Returns this rank's particles, `mine` itself on one rank; their
// order depends on the rank count, which nothing downstream depends on (field_points.hpp). Collective.
GhostedParticles distribute(GhostedParticles mine, const VolumeDecomposition& blocks, const mpi::Comm& comm);

}  // namespace phew::dtfe
