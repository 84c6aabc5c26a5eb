#include <phew/grid/deposit.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/mpi/route.hpp>

#include <algorithm>
#include <array>

namespace phew::grid {
namespace {

// A particle in cell units from the grid origin, with its mass.
struct Cloud {
  double u[3];
  double m;
};

// Kernels reach at most one cell beyond either edge (indices -1 .. n), so one step wraps them.
long wrap(long i, long n) { return i < 0 ? i + n : i >= n ? i - n : i; }

// The x-plane where a cloud's kernel starts ("home"); the kernel covers home .. home + width - 1.
long home_plane(Assignment a, double ux) { return weights_1d(a, ux).first; }

// Positions in cell units; particles outside a non-periodic grid are dropped (and counted).
class CellUnits {
 public:
  explicit CellUnits(const GridGeometry& g) : g_(g) {
    for (std::size_t d = 0; d < 3; ++d) {
      n_[d] = static_cast<double>(g.shape[d]);
      scale_[d] = n_[d] / g.extent[d];
    }
  }
  // False when the particle lies outside a non-periodic grid.
  bool convert(const double* x, double m, Cloud& c) const {
    for (std::size_t d = 0; d < 3; ++d) {
      double u = (x[d] - g_.origin[d]) * scale_[d];
      if (g_.periodic) {
        if (u >= n_[d]) u -= n_[d];  // rounding at the upper edge of the box
        if (u < 0) u += n_[d];
        if (!(u >= 0 && u < n_[d])) u = 0;
      } else if (!(u >= 0 && u < n_[d])) {
        return false;
      }
      c.u[d] = u;
    }
    c.m = m;
    return true;
  }

 private:
  const GridGeometry& g_;
  std::array<double, 3> n_{}, scale_{};
};

// The unwrapped home planes, within [lo, hi], under which a cloud is summed on a rank; a cloud near the
// periodic seam is summed twice (as home h and as h - nx), once per side. Calls f(bucket = plane - lo).
template <typename F>
void for_each_bucket(long home, long nx, bool periodic, long lo, long hi, F&& f) {
  if (!periodic) {
    if (home >= lo && home <= hi) f(home - lo);
    return;
  }
  for (long h = home - nx; h <= hi; h += nx)  // home is in [-1, nx-1]; nx may be tiny
    if (h >= lo) f(h - lo);
}

// Deposits the clouds of buckets [b0, b1), already sorted by bucket (start[b] .. start[b+1]; bucket b
// is home plane lo + b), onto planes [x0, x1) (mass: plane x0 first).
void deposit_sorted(const GridGeometry& g, Assignment a, const Cloud* clouds, const std::vector<std::uint64_t>& start,
                    long lo, std::size_t b0, std::size_t b1, long x0, long x1, double* mass) {
  const long ny = g.shape[1], nz = g.shape[2];
  const auto plane_cells = static_cast<std::size_t>(ny * nz);
  for (std::size_t b = b0; b < b1; ++b) {
    const long home = lo + static_cast<long>(b);
    for (std::uint64_t p = start[b]; p < start[b + 1]; ++p) {
      const Cloud& c = clouds[p];
      const Weights1D wx = weights_1d(a, c.u[0]), wy = weights_1d(a, c.u[1]), wz = weights_1d(a, c.u[2]);
      // The 2-D weights and cell offsets of the cloud in a plane, computed once for all its planes.
      double w2[9];
      long off[9];
      int n2 = 0;
      for (int q = 0; q < wy.width; ++q) {
        long j = wy.first + q;
        if (g.periodic) j = wrap(j, ny);
        else if (j < 0 || j >= ny) continue;
        const double my = c.m * wy.w[q];
        for (int r = 0; r < wz.width; ++r) {
          long k = wz.first + r;
          if (g.periodic) k = wrap(k, nz);
          else if (k < 0 || k >= nz) continue;
          w2[n2] = my * wz.w[r];
          off[n2++] = j * nz + k;
        }
      }
      for (int o = 0; o < wx.width; ++o) {
        const long t = home + o;
        if (t < x0 || t >= x1) continue;
        double* plane = mass + static_cast<std::size_t>(t - x0) * plane_cells;
        for (int i = 0; i < n2; ++i) plane[off[i]] += wx.w[o] * w2[i];
      }
    }
  }
}

}  // namespace

DepositResult deposit(const GridGeometry& g, Assignment a, const mpi::SlabDecomposition& slabs,
                      std::span<const double> position, std::span<const double> mass, const mpi::Comm& comm, int threads,
                      const DepositMemory& memory) {
  DepositResult result;
  const long nx = g.shape[0];
  const int width = kernel_width(a);
  const long x0 = slabs.begin(comm.rank()), x1 = slabs.end(comm.rank());
  const auto plane_cells = static_cast<std::size_t>(g.shape[1] * g.shape[2]);
  const CellUnits units(g);
  std::uint64_t outside = 0;

  // Each cell sums its clouds by home plane (lowest first), then in snapshot order: the same order, so the
  // same bits, on every decomposition. A stable counting sort by home plane gives that order.
  const long lo = x0 - (width - 1), hi = x1 - 1;
  const auto nbuckets = static_cast<std::size_t>(std::max(0L, hi - lo + 1));
  std::vector<std::uint64_t> start(nbuckets + 1, 0);
  core::RawVector<Cloud> sorted;
  // Counts the clouds of items [0, n) (get(i, cloud): false for an item outside the grid) per bucket,
  // then places them: stable, on threads. Each thread takes one fixed block of the items; within every
  // bucket block k's clouds go after blocks 0..k-1's, so the order is the items' order for any number of
  // threads. Returns the items outside.
  auto counting_sort = [&](std::size_t n, auto&& get) {
    const auto blocks = static_cast<std::size_t>(std::max(threads, 1));
    const std::size_t per_block = std::max<std::size_t>(1, (n + blocks - 1) / blocks);
    std::vector<std::vector<std::uint64_t>> count(blocks, std::vector<std::uint64_t>(nbuckets, 0));
    std::vector<std::uint64_t> out_of_grid(blocks, 0);
    core::parallel_for(threads, n, per_block, [&](std::size_t b, std::size_t e, int) {
      const std::size_t k = b / per_block;
      Cloud c;
      for (std::size_t i = b; i < e; ++i) {
        if (!get(i, c)) {
          ++out_of_grid[k];
          continue;
        }
        for_each_bucket(home_plane(a, c.u[0]), nx, g.periodic, lo, hi, [&](long bucket) { ++count[k][static_cast<std::size_t>(bucket)]; });
      }
    });
    for (std::size_t bucket = 0; bucket < nbuckets; ++bucket) {
      std::uint64_t in_bucket = 0;
      for (std::size_t k = 0; k < blocks; ++k) in_bucket += count[k][bucket];
      start[bucket + 1] = start[bucket] + in_bucket;
    }
    // count[k][bucket] becomes block k's first place in the bucket.
    for (std::size_t bucket = 0; bucket < nbuckets; ++bucket) {
      std::uint64_t at = start[bucket];
      for (std::size_t k = 0; k < blocks; ++k) std::swap(at, count[k][bucket]), at += count[k][bucket];
    }
    sorted.resize(start.back());
    core::parallel_for(threads, n, per_block, [&](std::size_t b, std::size_t e, int) {
      std::vector<std::uint64_t>& fill = count[b / per_block];
      Cloud c;
      for (std::size_t i = b; i < e; ++i)
        if (get(i, c))
          for_each_bucket(home_plane(a, c.u[0]), nx, g.periodic, lo, hi,
                          [&](long bucket) { sorted[fill[static_cast<std::size_t>(bucket)]++] = c; });
    });
    std::uint64_t total = 0;
    for (const std::uint64_t o : out_of_grid) total += o;
    return total;
  };

  const std::size_t n_input = mass.size();
  const auto release_input = [&] {
    if (memory.release_input) memory.release_input();
  };
  if (comm.size() == 1) {
    // Nothing moves: sort straight from the input (converting twice is cheaper than another copy).
    outside = counting_sort(mass.size(), [&](std::size_t i, Cloud& c) { return units.convert(&position[3 * i], mass[i], c); });
    release_input();
  } else {
    // Each cloud goes to the owners of the planes it touches (at most `width`, usually one), in snapshot
    // order; received clouds are grouped by source rank, so they stay in snapshot order.
    const auto nranks = static_cast<std::size_t>(comm.size());
    auto destinations = [&](const Cloud& c, std::array<int, 3>& dest) {
      const long home = home_plane(a, c.u[0]);
      int n = 0;
      for (int o = 0; o < width; ++o) {
        long t = home + o;
        if (g.periodic) t = ((t % nx) + nx) % nx;
        else if (t < 0 || t >= nx) continue;
        const int r = slabs.owner(t);
        if (std::find(dest.begin(), dest.begin() + n, r) == dest.begin() + n) dest[static_cast<std::size_t>(n++)] = r;
      }
      return n;
    };
    core::RawVector<Cloud> converted(mass.size());
    std::size_t n = 0;
    for (std::size_t i = 0; i < mass.size(); ++i)
      if (units.convert(&position[3 * i], mass[i], converted[n])) ++n;
      else ++outside;
    release_input();
    std::vector<std::uint64_t> counts(nranks, 0);
    std::array<int, 3> dest{};
    for (std::size_t i = 0; i < n; ++i) {
      const int k = destinations(converted[i], dest);
      for (int j = 0; j < k; ++j) ++counts[static_cast<std::size_t>(dest[static_cast<std::size_t>(j)])];
    }
    std::vector<std::uint64_t> offset = mpi::offsets_of(counts);
    core::RawVector<Cloud> send(offset.back() + counts.back());
    for (std::size_t i = 0; i < n; ++i) {
      const int k = destinations(converted[i], dest);
      for (int j = 0; j < k; ++j) send[offset[static_cast<std::size_t>(dest[static_cast<std::size_t>(j)])]++] = converted[i];
    }
    converted = core::RawVector<Cloud>();
    core::RawVector<Cloud> received;
    comm.all_to_all<Cloud>(std::span<const Cloud>(send.data(), send.size()), counts, received);
    send = core::RawVector<Cloud>();
    counting_sort(received.size(), [&](std::size_t i, Cloud& c) {
      c = received[i];
      return true;
    });
    received = core::RawVector<Cloud>();  // held twice no longer
  }

  // 3. One streaming pass over the sorted clouds. Threads take blocks of planes, as ranks take slabs:
  // each sums every cloud reaching its planes (home planes from width-1 below), in the same order. With a
  // sink, each block is summed in a scratch of its own (a few planes: a block re-reads the clouds of the
  // width-1 planes below it) and handed over, so the float64 grid is never whole.
  const auto planes = static_cast<std::size_t>(x1 - x0);
  const std::size_t per_thread = planes / (4 * static_cast<std::size_t>(std::max(threads, 1)));
  const std::size_t block = std::max<std::size_t>(1, memory.sink ? std::min<std::size_t>(per_thread, 8) : per_thread);
  if (!memory.sink) result.mass.assign(planes * plane_cells, 0.0);
  std::vector<double> local_sums(planes, 0.0);
  core::parallel_for(threads, planes, block, [&](std::size_t p0, std::size_t p1, int) {
    const long bx0 = x0 + static_cast<long>(p0), bx1 = x0 + static_cast<long>(p1);
    const auto b0 = static_cast<std::size_t>(bx0 - (width - 1) - lo), b1 = static_cast<std::size_t>(bx1 - lo);
    std::vector<double> scratch;
    double* out = result.mass.data() + p0 * plane_cells;
    if (memory.sink) {
      scratch.assign((p1 - p0) * plane_cells, 0.0);
      out = scratch.data();
    }
    deposit_sorted(g, a, sorted.data(), start, lo, b0, std::min(b1, nbuckets), bx0, bx1, out);
    // Totals that do not depend on the decomposition: per-plane sums in order (then over planes in order).
    for (std::size_t i = p0; i < p1; ++i) {
      double s = 0;
      const double* plane = out + (i - p0) * plane_cells;
      for (std::size_t c = 0; c < plane_cells; ++c) s += plane[c];
      local_sums[i] = s;
    }
    if (memory.sink) memory.sink(p0, p1, out);
  });
  result.plane_mass = comm.all_gatherv<double>(local_sums);
  for (double s : result.plane_mass) result.mass_total += s;
  result.particles_outside = comm.sum<std::uint64_t>(outside);
  result.particles_in = comm.sum<std::uint64_t>(n_input - outside);
  return result;
}

}  // namespace phew::grid
