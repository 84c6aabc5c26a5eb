// Uses phew as a library: deposits two particles with CIC and parses a threshold.
#include <core/quantity.hpp>
#include <grid/deposit.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  phew::GridGeometry g;
  g.shape = {4, 4, 4};
  g.extent = {1.0, 1.0, 1.0};
  const std::vector<double> pos{0.125, 0.125, 0.125, 0.5, 0.5, 0.5};
  const std::vector<double> mass{1.0, 8.0};
  const phew::mpi::Comm comm;
  const auto r = phew::deposit(g, phew::Assignment::cic, phew::mpi::SlabDecomposition(4, comm.size()), pos, mass, comm);
  const double threshold = phew::DensityThreshold::parse("80mean").resolve(r.mass_total, std::nullopt);
  if (comm.root()) std::printf("deposited mass %g; 80mean of it is %g\n", r.mass_total, threshold);
  MPI_Finalize();
  return r.mass_total == 9.0 ? 0 : 1;
}
