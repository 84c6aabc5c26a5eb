#include "grid/deposit.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <array>
#include <climits>

namespace phew {
namespace {

// A particle in cell units from the grid origin, with its mass.
struct Cloud {
  double u[3];
  double m;
};

// Kernels reach at most one cell beyond either edge (indices -1 .. n), so one step wraps them.
long wrap(long i, long n) { return i < 0 ? i + n : i >= n ? i - n : i; }

// The x-planes a cloud touches, wrapped (periodic) or clipped (not); at most 3.
struct Planes {
  std::array<long, 3> plane;
  std::array<int, 3> offset;  // index into the kernel's weights
  int n = 0;
};

Planes touched_planes(Assignment a, double ux, long nx, bool periodic) {
  const Weights1D w = weights_1d(a, ux);
  Planes p;
  for (int o = 0; o < w.width; ++o) {
    long t = w.first + o;
    if (periodic) t = wrap(t, nx);
    else if (t < 0 || t >= nx) continue;
    p.plane[static_cast<std::size_t>(p.n)] = t;
    p.offset[static_cast<std::size_t>(p.n)] = o;
    ++p.n;
  }
  return p;
}

// Converts positions to cell units; drops particles outside a non-periodic grid.
std::vector<Cloud> to_clouds(const GridGeometry& g, std::span<const double> position, std::span<const double> mass,
                             std::uint64_t& outside) {
  std::vector<Cloud> clouds;
  clouds.reserve(mass.size());
  std::array<double, 3> scale, n;
  for (int d = 0; d < 3; ++d) {
    n[static_cast<std::size_t>(d)] = static_cast<double>(g.shape[static_cast<std::size_t>(d)]);
    scale[static_cast<std::size_t>(d)] = n[static_cast<std::size_t>(d)] / g.extent[static_cast<std::size_t>(d)];
  }
  for (std::size_t i = 0; i < mass.size(); ++i) {
    Cloud c{{0, 0, 0}, mass[i]};
    bool inside = true;
    for (std::size_t d = 0; d < 3; ++d) {
      double u = (position[3 * i + d] - g.origin[d]) * scale[d];
      if (g.periodic) {
        if (u >= n[d]) u -= n[d];  // rounding at the upper edge of the box
        if (u < 0) u += n[d];
        if (u >= n[d] || u < 0) u = 0;
      } else if (!(u >= 0 && u < n[d])) {
        inside = false;
      }
      c.u[d] = u;
    }
    if (inside) clouds.push_back(c);
    else ++outside;
  }
  return clouds;
}

// Sends each cloud to every rank owning a plane it touches; received clouds keep snapshot order.
std::vector<Cloud> route(const std::vector<Cloud>& clouds, Assignment a, const GridGeometry& g,
                         const mpi::SlabDecomposition& slabs, const mpi::Comm& comm) {
  const auto nranks = static_cast<std::size_t>(comm.size());
  auto destinations = [&](const Cloud& c, std::array<int, 3>& dest) {
    const Planes p = touched_planes(a, c.u[0], g.shape[0], g.periodic);
    int n = 0;
    for (int k = 0; k < p.n; ++k) {
      const int r = slabs.owner(p.plane[static_cast<std::size_t>(k)]);
      if (std::find(dest.begin(), dest.begin() + n, r) == dest.begin() + n) dest[static_cast<std::size_t>(n++)] = r;
    }
    return n;
  };
  std::vector<std::uint64_t> counts(nranks, 0);
  std::array<int, 3> dest{};
  for (const Cloud& c : clouds) {
    const int n = destinations(c, dest);
    for (int k = 0; k < n; ++k) ++counts[static_cast<std::size_t>(dest[static_cast<std::size_t>(k)])];
  }
  std::vector<std::uint64_t> offset(nranks, 0);
  for (std::size_t r = 1; r < nranks; ++r) offset[r] = offset[r - 1] + counts[r - 1];
  std::vector<Cloud> send(offset.back() + counts.back());
  for (const Cloud& c : clouds) {
    const int n = destinations(c, dest);
    for (int k = 0; k < n; ++k) send[offset[static_cast<std::size_t>(dest[static_cast<std::size_t>(k)])]++] = c;
  }
  return comm.all_to_all<Cloud>(send, counts);
}

}  // namespace

DepositResult deposit(const GridGeometry& g, Assignment a, const mpi::SlabDecomposition& slabs,
                      std::span<const double> position, std::span<const double> mass, const mpi::Comm& comm) {
  DepositResult result;
  std::uint64_t outside = 0;
  const std::vector<Cloud> clouds = route(to_clouds(g, position, mass, outside), a, g, slabs, comm);
  if (clouds.size() >= UINT32_MAX) throw Error::internal("more than 2^32 particles on one rank");

  const long nx = g.shape[0], ny = g.shape[1], nz = g.shape[2];
  const long x0 = slabs.begin(comm.rank()), x1 = slabs.end(comm.rank());
  const int width = kernel_width(a);
  const auto plane_cells = static_cast<std::size_t>(ny * nz);

  // Index the received clouds by (local target plane, kernel offset) in a CSR layout; within a bucket
  // they stay in snapshot order.
  const auto nbuckets = static_cast<std::size_t>((x1 - x0) * width);
  std::vector<std::uint64_t> start(nbuckets + 1, 0);
  auto for_each_target = [&](const Cloud& c, auto&& fn) {
    const Planes p = touched_planes(a, c.u[0], nx, g.periodic);
    for (int k = 0; k < p.n; ++k) {
      const long t = p.plane[static_cast<std::size_t>(k)];
      if (t >= x0 && t < x1) fn(static_cast<std::size_t>((t - x0) * width + p.offset[static_cast<std::size_t>(k)]));
    }
  };
  for (const Cloud& c : clouds) for_each_target(c, [&](std::size_t b) { ++start[b + 1]; });
  for (std::size_t b = 0; b < nbuckets; ++b) start[b + 1] += start[b];
  std::vector<std::uint32_t> members(start.back());
  {
    std::vector<std::uint64_t> fill(start.begin(), start.end() - 1);
    for (std::uint32_t i = 0; i < clouds.size(); ++i)
      for_each_target(clouds[i], [&](std::size_t b) { members[fill[b]++] = i; });
  }

  // Each local plane sums its clouds: largest kernel offset first (the cloud's first plane is furthest
  // below), then snapshot order. The same order on any decomposition gives the same bits.
  result.mass.assign(static_cast<std::size_t>(x1 - x0) * plane_cells, 0.0);
  for (long t = x0; t < x1; ++t) {
    double* plane = result.mass.data() + static_cast<std::size_t>(t - x0) * plane_cells;
    for (int o = width - 1; o >= 0; --o) {
      const std::size_t b = static_cast<std::size_t>((t - x0) * width + o);
      for (std::uint64_t m = start[b]; m < start[b + 1]; ++m) {
        const Cloud& c = clouds[members[m]];
        const double mx = c.m * weights_1d(a, c.u[0]).w[o];
        const Weights1D wy = weights_1d(a, c.u[1]), wz = weights_1d(a, c.u[2]);
        for (int p = 0; p < wy.width; ++p) {
          long j = wy.first + p;
          if (g.periodic) j = wrap(j, ny);
          else if (j < 0 || j >= ny) continue;
          const double mxy = mx * wy.w[p];
          double* row = plane + j * nz;
          for (int q = 0; q < wz.width; ++q) {
            long k = wz.first + q;
            if (g.periodic) k = wrap(k, nz);
            else if (k < 0 || k >= nz) continue;
            row[k] += mxy * wz.w[q];
          }
        }
      }
    }
  }

  // Totals that do not depend on the decomposition: per-plane sums in order, then over planes in order.
  std::vector<double> local_sums(static_cast<std::size_t>(x1 - x0), 0.0);
  for (std::size_t i = 0; i < local_sums.size(); ++i) {
    double s = 0;
    const double* plane = result.mass.data() + i * plane_cells;
    for (std::size_t c = 0; c < plane_cells; ++c) s += plane[c];
    local_sums[i] = s;
  }
  result.plane_mass = comm.all_gatherv<double>(local_sums);
  for (double s : result.plane_mass) result.mass_total += s;
  result.particles_outside = comm.sum<std::uint64_t>(outside);
  result.particles_in = comm.sum<std::uint64_t>(mass.size() - outside);
  return result;
}

}  // namespace phew
