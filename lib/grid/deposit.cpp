#include <phew/grid/deposit.hpp>

#include <phew/core/error.hpp>
#include <phew/core/fixed_sum.hpp>
#include <phew/core/memory.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/threads.hpp>
#include <phew/mpi/exact_sums.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <utility>

namespace phew::grid {
namespace {

// A particle in cell units from the grid origin, with its mass.
struct GridCloud {
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
  bool convert(const double* x, double m, GridCloud& c) const {
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

// Pages of clouds cut one after another from blocks mapped from the system and advised for transparent
// huge pages, as the big buffers are (core::back_big_buffers_with_huge_pages): the clouds are faulted
// in 2 MiB at a time. Each bucket had pages of 1 MiB mapped one by one, and their 4 KiB faults were
// 135 k of cic-project's 136 k on 16.7 M particles, about 40 % of its time on a virtual machine. A page
// is small so that the buckets' partly filled last pages hold little: 8 KiB each on average (2 MiB for
// 258 planes; 64 KiB pages held 15 MiB more at the peak on 2.1 M particles). Memory goes back a huge page
// at a time, once every page cut from it is given back: page by page, each call split a huge page and
// flushed the other cores' TLBs (a third of the sums' time).
class CloudPool {
 public:
  static constexpr std::size_t kPageBytes = std::size_t{16} << 10;
  struct Page {
    void* bytes;
    std::uint32_t block, index;  // the block it was cut from, and its place there
  };
  CloudPool() = default;
  ~CloudPool() {
    for (void* b : blocks_) core::unmap_pages(b, kBlockBytes);
  }
  CloudPool(const CloudPool&) = delete;
  CloudPool& operator=(const CloudPool&) = delete;

  // A new page. Not thread-safe (one thread files the clouds).
  Page take() {
    if (blocks_.empty() || used_ == kPagesPerBlock) {
      void* p = core::map_pages(kBlockBytes);
      try {
        blocks_.push_back(p);
        live_.emplace_back(kRegionsPerBlock);
      } catch (...) {
        core::unmap_pages(p, kBlockBytes);
        throw;
      }
      used_ = 0;
    }
    live_.back()[used_ / kPagesPerRegion].fetch_add(1, std::memory_order_relaxed);
    const Page page{static_cast<char*>(blocks_.back()) + kPageBytes * used_,
                    static_cast<std::uint32_t>(blocks_.size() - 1), static_cast<std::uint32_t>(used_)};
    ++used_;
    return page;
  }
  // A page not read again: its huge page goes back once the last page cut from it does. Thread-safe once
  // the filing is done.
  void give_back(const Page& page) {
    const std::size_t region = page.index / kPagesPerRegion;
    if (live_[page.block][region].fetch_sub(1, std::memory_order_acq_rel) == 1)
      ::madvise(static_cast<char*>(blocks_[page.block]) + region * kRegionBytes, kRegionBytes, MADV_DONTNEED);
  }

 private:
  static constexpr std::size_t kRegionBytes = core::kHugePageBytes;
  static constexpr std::size_t kBlockBytes = std::size_t{8} << 20;  // a multiple of 2 MiB: aligned to them
  static constexpr std::size_t kPagesPerBlock = kBlockBytes / kPageBytes;
  static constexpr std::size_t kPagesPerRegion = kRegionBytes / kPageBytes;
  static constexpr std::size_t kRegionsPerBlock = kBlockBytes / kRegionBytes;
  std::vector<void*> blocks_;
  std::vector<std::vector<std::atomic<std::uint32_t>>> live_;  // pages not given back, per huge page
  std::size_t used_ = 0;                                       // pages taken from the last block
};

// Clouds filed by bucket (home plane - lo) and by source rank, each (bucket, source) in arrival order,
// in pages of the pool: a bucket grows without a count first, and its memory goes back once every plane
// it reaches is summed. A bucket is read source by source in rank order, each in its arrival order: the
// global order of the particles (rank r's share before rank r+1's), however the rounds interleaved.
//
// A page holds the positions alone (24 B a cloud) while its clouds share one mass, as most snapshots'
// particles of a type do, or else whole clouds (32 B): the pool's first touch was half of one rank's
// time on a virtual machine (bench/README.md, cic_bench). At the first cloud of another mass a page of
// positions becomes a page of whole clouds in place, or ends when it holds more than those would; pages
// of whole clouds follow until one fills with a run of one mass at its end. The clouds, their order and
// so every sum are the same either way.
class CloudBuckets {
 public:
  CloudBuckets(std::size_t buckets, std::size_t sources)
      : sources_(sources), pools_((buckets + kPlanesPerPool - 1) / kPlanesPerPool), pages_(buckets * sources) {}
  std::size_t buckets() const { return pages_.size() / sources_; }
  void add(std::size_t b, std::size_t source, const GridCloud& c) {
    std::vector<Filed>& pages = pages_[b * sources_ + source];
    const std::uint64_t mass = std::bit_cast<std::uint64_t>(c.m);  // the same bits: the same mass
    if (!pages.empty()) {
      Filed& last = pages.back();
      if (last.one_mass && last.mass != mass && last.fill <= kClouds) last.make_whole();
      if (last.one_mass && last.fill < kPositions && last.mass == mass) {
        std::copy(c.u, c.u + 3, last.positions() + 3 * last.fill++);
        return;
      }
      if (!last.one_mass && last.fill < kClouds) {
        const bool same = last.fill > 0 && std::bit_cast<std::uint64_t>(last.clouds()[last.fill - 1].m) == mass;
        last.run = same ? last.run + 1 : 1;
        last.clouds()[last.fill++] = c;
        return;
      }
    }
    // A new page: positions alone after a full page of them, or after whole clouds that ended in a long
    // run of one mass; else whole clouds.
    const bool one_mass =
        pages.empty() || (pages.back().one_mass ? pages.back().mass == mass : pages.back().run >= kClouds / 2);
    pages.push_back({pools_[b / kPlanesPerPool].take(), one_mass, 0, 0, mass});
    add(b, source, c);
  }
  template <typename F>
  void for_each(std::size_t b, F&& f) const {
    for (std::size_t at = b * sources_; at < (b + 1) * sources_; ++at)
      for (const Filed& page : pages_[at]) {
        if (!page.one_mass) {
          for (std::size_t i = 0; i < page.fill; ++i) f(page.clouds()[i]);
          continue;
        }
        GridCloud c;
        c.m = std::bit_cast<double>(page.mass);
        const double* u = page.positions();
        for (std::size_t i = 0; i < page.fill; ++i) {
          std::copy(u + 3 * i, u + 3 * i + 3, c.u);
          f(c);
        }
      }
  }
  // Called by one thread per bucket: the buckets' page lists are their own.
  void release(std::size_t b) {
    for (std::size_t at = b * sources_; at < (b + 1) * sources_; ++at) {
      for (const Filed& page : pages_[at]) pools_[b / kPlanesPerPool].give_back(page.page);
      core::release(pages_[at]);
    }
  }

 private:
  // The buckets of a run of planes share a pool, so that a huge page holds the clouds of a few planes
  // only and goes back soon after they are summed (one pool for all kept every huge page to the end:
  // +49 MiB at the peak on 16.7 M particles); each pool's last huge page is partly filled.
  static constexpr std::size_t kPlanesPerPool = 32;
  static constexpr std::size_t kClouds = CloudPool::kPageBytes / sizeof(GridCloud);        // 512
  static constexpr std::size_t kPositions = CloudPool::kPageBytes / (3 * sizeof(double));  // 682
  struct Filed {
    CloudPool::Page page;
    bool one_mass;       // positions alone, all of `mass`; else whole clouds
    std::uint32_t fill;  // clouds in the page
    std::uint32_t run;   // whole clouds: how many at the end share the last one's mass
    std::uint64_t mass;  // positions alone: the mass's bits
    double* positions() const { return static_cast<double*>(page.bytes); }
    GridCloud* clouds() const { return static_cast<GridCloud*>(page.bytes); }
    // Positions to whole clouds in place (fill <= kClouds), the last first: cloud i's 32 bytes start at
    // or after position i's 24, so no position is overwritten before it is read.
    void make_whole() {
      const double m = std::bit_cast<double>(mass);
      for (std::size_t i = fill; i-- > 0;) {
        const double* u = positions() + 3 * i;
        const GridCloud c{{u[0], u[1], u[2]}, m};
        clouds()[i] = c;
      }
      one_mass = false;
      run = fill;
    }
  };
  std::size_t sources_;
  std::vector<CloudPool> pools_;
  std::vector<std::vector<Filed>> pages_;
};

// Deposits the clouds of buckets [b0, b1) (bucket b is home plane lo + b) onto planes [x0, x1) of a
// block whose rows are [y0, y1) x [z0, z1) (mass: plane x0 first, each plane the block's rows).
void deposit_buckets(const GridGeometry& g, Assignment a, const CloudBuckets& clouds, long lo, std::size_t b0,
                     std::size_t b1, long x0, long x1, const mpi::BlockDecomposition::Box& box, double* mass) {
  const long ny = g.shape[1], nz = g.shape[2];
  const long y0 = box.lo[1], y1 = box.hi[1], z0 = box.lo[2], z1 = box.hi[2], bz = z1 - z0;
  const auto plane_cells = static_cast<std::size_t>((y1 - y0) * bz);
  for (std::size_t b = b0; b < b1; ++b) {
    const long home = lo + static_cast<long>(b);
    clouds.for_each(b, [&](const GridCloud& c) {
      const Weights1D wx = weights_1d(a, c.u[0]), wy = weights_1d(a, c.u[1]), wz = weights_1d(a, c.u[2]);
      // The 2-D weights and cell offsets of the cloud in a plane, computed once for all its planes.
      double w2[9];
      long off[9];
      int n2 = 0;
      for (int q = 0; q < wy.width; ++q) {
        long j = wy.first + q;
        if (g.periodic) j = wrap(j, ny);
        if (j < y0 || j >= y1) continue;  // outside the block (or an open grid)
        const double my = c.m * wy.w[q];
        for (int r = 0; r < wz.width; ++r) {
          long k = wz.first + r;
          if (g.periodic) k = wrap(k, nz);
          if (k < z0 || k >= z1) continue;
          w2[n2] = my * wz.w[r];
          off[n2++] = (j - y0) * bz + k - z0;
        }
      }
      for (int o = 0; o < wx.width; ++o) {
        const long t = home + o;
        if (t < x0 || t >= x1) continue;
        double* plane = mass + static_cast<std::size_t>(t - x0) * plane_cells;
        for (int i = 0; i < n2; ++i) plane[off[i]] += wx.w[o] * w2[i];
      }
    });
  }
}

}  // namespace

struct Deposit::State {
  State(const GridGeometry& grid, Assignment assignment, const mpi::BlockDecomposition& b, const mpi::Comm& c, int t)
      : g(grid),
        a(assignment),
        blocks(b),
        comm(c),
        threads(std::max(t, 1)),
        units(grid),
        nx(grid.shape[0]),
        width(kernel_width(assignment)),
        box(blocks.box(comm.rank())),
        x0(box.lo[0]),
        x1(box.hi[0]),
        lo(x0 - (width - 1)),
        hi(x1 - 1),
        buckets(static_cast<std::size_t>(std::max(0L, hi - lo + 1)), static_cast<std::size_t>(comm.size())),
        me(static_cast<std::size_t>(comm.rank())),
        counts(static_cast<std::size_t>(comm.size())),
        outbox(static_cast<std::size_t>(comm.size())) {
    for (std::size_t d = 0; d < 3; ++d) {
      place[d].resize(static_cast<std::size_t>(grid.shape[d]));
      for (std::int64_t i = 0; i < grid.shape[d]; ++i) place[d][static_cast<std::size_t>(i)] = blocks.place(d, i);
    }
  }

  // Files a cloud from rank `source`, whose home plane is `home`, under every bucket this rank sums it in.
  void file(const GridCloud& c, std::size_t source, long home) {
    for_each_bucket(home, nx, g.periodic, lo, hi, [&](long b) { buckets.add(static_cast<std::size_t>(b), source, c); });
  }
  void file(const GridCloud& c, std::size_t source) { file(c, source, home_plane(a, c.u[0])); }

  // The ranks whose blocks a cloud reaches (at most width^3, usually one), and its home plane.
  int destinations(const GridCloud& c, std::array<int, 27>& dest, long& home) {
    mpi::Extent3 first{}, last{};
    std::array<int, 3> at{};
    bool lone = true;  // every cell of the cloud inside the grid and in one place of each axis
    for (std::size_t d = 0; d < 3; ++d) {
      first[d] = weights_1d(a, c.u[d]).first;
      last[d] = first[d] + width - 1;
      if (first[d] < 0 || last[d] >= g.shape[d]) {
        lone = false;
        continue;
      }
      at[d] = place[d][static_cast<std::size_t>(first[d])];
      lone = lone && at[d] == place[d][static_cast<std::size_t>(last[d])];
    }
    home = first[0];  // home_plane's
    // Most clouds lie inside one block, whose rank is then the only destination: found in the places'
    // tables, where the clouds of a snapshot in no spatial order left the block of the cloud before
    // half the time at two ranks and each searched the lattice (7 % of a rank's time).
    if (lone) {
      dest[0] = blocks.rank_at(at[0], at[1], at[2]);
      return 1;
    }
    int k = 0;
    blocks.for_each_rank_touching(first, last, g.periodic, [&](int r) { dest[static_cast<std::size_t>(k++)] = r; });
    return k;
  }

  // Several ranks: a cloud to the ranks whose blocks it reaches. Those this rank sums itself are filed
  // at once, in their order, under its own source (the order the exchange would have brought them back
  // in); the others wait in their destination's outbox until the round's exchange. A cloud is converted
  // once and written once before it leaves: no buffer of the round's clouds, no list of destinations.
  void route(const GridCloud& c) {
    std::array<int, 27> dest{};
    long home = 0;
    const int k = destinations(c, dest, home);
    for (int j = 0; j < k; ++j) {
      const auto r = static_cast<std::size_t>(dest[static_cast<std::size_t>(j)]);
      if (r == me)
        file(c, me, home);
      else
        outbox[r].push_back(c);
    }
  }

  // The round's outboxes to their ranks; what arrives is filed under its source. Collective.
  void exchange() {
    std::size_t filled = 0, total = 0;
    const RoutedClouds* only = nullptr;
    for (std::size_t r = 0; r < outbox.size(); ++r) {
      counts[r] = outbox[r].size();
      total += outbox[r].size();
      if (!outbox[r].empty()) {
        ++filled;
        only = &outbox[r];
      }
    }
    // One outbox goes as it is (at two ranks, always); several go through one buffer in rank order.
    std::span<const GridCloud> out;
    if (filled == 1) {
      out = std::span<const GridCloud>(only->data(), only->size());
    } else if (filled > 1) {
      send.resize(total);
      auto at = send.begin();
      for (const RoutedClouds& waiting : outbox) at = std::copy(waiting.begin(), waiting.end(), at);
      out = std::span<const GridCloud>(send.data(), send.size());
    }
    comm.all_to_all<GridCloud>(out, counts, received);
    // Received clouds come grouped by source rank in rank order; the sizes of the groups are exchanged
    // too, so that each is filed under its source.
    const std::vector<std::uint64_t> from =
        comm.all_to_all<std::uint64_t>(std::span<const std::uint64_t>(counts), ones);
    std::size_t at = 0;
    for (std::size_t source = 0; source < from.size(); ++source)
      for (std::uint64_t i = 0; i < from[source]; ++i) file(received[at++], source);  // none from itself
    // An outbox keeps its memory for the next round, unless it held far more than it needed in this
    // one: with many ranks and a snapshot in spatial order, each would otherwise keep a round's worth.
    for (RoutedClouds& waiting : outbox) {
      if (waiting.capacity() > 2 * waiting.size() + kOutboxSlack)
        core::release(waiting);
      else
        waiting.clear();
    }
  }

  GridGeometry g;
  Assignment a;
  const mpi::BlockDecomposition& blocks;
  const mpi::Comm& comm;
  int threads;
  CellUnits units;
  long nx, width;
  mpi::BlockDecomposition::Box box;
  long x0, x1;
  long lo, hi;  // the home planes summed here: the block's, and width-1 below
  CloudBuckets buckets;
  // Several ranks, one add()'s round (reused): clouds per destination, those waiting for each, and the
  // buffers of the exchange.
  using RoutedClouds = core::RawVector<GridCloud>;
  static constexpr std::size_t kOutboxSlack = 256;  // clouds an outbox keeps beyond twice its round's
  std::size_t me;
  std::vector<std::uint64_t> counts;
  std::vector<std::uint64_t> ones = std::vector<std::uint64_t>(counts.size(), 1);  // one count to each rank
  std::vector<RoutedClouds> outbox;
  RoutedClouds send, received;
  std::array<std::vector<int>, 3> place;  // per axis, the lattice place holding each cell (BlockDecomposition::place)
  std::uint64_t n_input = 0, outside = 0;
  double heaviest = 0;  // the largest particle mass inside: with the count, a bound on every sum
  bool finished = false;
};

Deposit::Deposit(const GridGeometry& grid, Assignment assignment, const mpi::BlockDecomposition& blocks,
                 const mpi::Comm& comm, int threads)
    : s_(std::make_unique<State>(grid, assignment, blocks, comm, threads)) {}

Deposit::~Deposit() = default;

void Deposit::add(std::span<const double> position, std::span<const double> mass) {
  State& s = *s_;
  if (s.finished) throw core::Error::internal("deposit: particles added after finish()");
  s.n_input += mass.size();
  const bool routed = s.comm.size() > 1;
  GridCloud c;
  for (std::size_t i = 0; i < mass.size(); ++i) {
    if (!s.units.convert(&position[3 * i], mass[i], c)) {
      ++s.outside;
      continue;
    }
    s.heaviest = std::max(s.heaviest, std::abs(mass[i]));
    if (routed)
      s.route(c);
    else
      s.file(c, 0);
  }
  if (routed) s.exchange();
}

DepositResult Deposit::finish(const DepositMemory& memory) {
  State& s = *s_;
  if (s.finished) throw core::Error::internal("deposit: finish() called twice");
  s.finished = true;
  // The exchange's buffers are done with before the grid is allocated.
  for (State::RoutedClouds& waiting : s.outbox) core::release(waiting);
  core::release(s.send);
  core::release(s.received);
  const GridGeometry& g = s.g;
  const long x0 = s.x0, x1 = s.x1, lo = s.lo, width = s.width;
  const auto plane_cells = static_cast<std::size_t>(s.box.size()[1] * s.box.size()[2]);
  // The fixed-point unit of the total: every cell and the total are below the heaviest particle's mass
  // times the particles, values every decomposition agrees on.
  const core::FixedScale scale = core::FixedScale::for_total(
      s.comm.max(s.heaviest) * static_cast<double>(s.comm.sum<std::uint64_t>(s.n_input - s.outside)));

  if (memory.before_sums) memory.before_sums();

  // One pass plane by plane. Threads take runs of the block's planes: each sums every cloud reaching its
  // planes (home planes from width-1 below), in the same order. A bucket's pages go back
  // once the last block that reads it is done. With a sink, each block is summed in a scratch of its
  // own (a few planes: a block re-reads the clouds of the width-1 planes below it) and handed over, so
  // the float64 grid is never whole.
  DepositResult result;
  const auto planes = static_cast<std::size_t>(x1 - x0);
  const std::size_t nbuckets = s.buckets.buckets();
  const std::size_t per_thread = planes / (4 * static_cast<std::size_t>(s.threads));
  const std::size_t block = std::max<std::size_t>(1, memory.sink ? std::min<std::size_t>(per_thread, 8) : per_thread);
  if (!memory.sink) result.mass.assign(planes * plane_cells, 0.0);
  // Bucket b (home plane lo + b) is read by the blocks holding planes lo + b .. lo + b + width - 1: the
  // planes of [p0, p1) it reaches.
  const auto reached = [&](std::size_t b, long p0, long p1) {
    const long first = lo + static_cast<long>(b);
    return static_cast<int>(std::max(0L, std::min(first + width, p1) - std::max(first, p0)));
  };
  std::vector<std::atomic<int>> readers(nbuckets);
  for (std::size_t b = 0; b < nbuckets; ++b) readers[b].store(reached(b, x0, x1), std::memory_order_relaxed);
  std::vector<core::FixedInt> local_sums(planes, 0);
  core::parallel_for(s.threads, planes, block, [&](std::size_t p0, std::size_t p1, int) {
    const long bx0 = x0 + static_cast<long>(p0), bx1 = x0 + static_cast<long>(p1);
    const auto b0 = static_cast<std::size_t>(bx0 - (width - 1) - lo),
               b1 = std::min(static_cast<std::size_t>(bx1 - lo), nbuckets);
    std::vector<double> scratch;
    double* out = result.mass.data() + p0 * plane_cells;
    if (memory.sink) {
      scratch.assign((p1 - p0) * plane_cells, 0.0);
      out = scratch.data();
    }
    deposit_buckets(g, s.a, s.buckets, lo, b0, b1, bx0, bx1, s.box, out);
    for (std::size_t b = b0; b < b1; ++b)
      if (const int mine = reached(b, bx0, bx1);
          mine > 0 && readers[b].fetch_sub(mine, std::memory_order_acq_rel) == mine)
        s.buckets.release(b);
    // The total, exactly in fixed point: it does not depend on how blocks and threads cut the grid.
    for (std::size_t i = p0; i < p1; ++i) {
      core::FixedInt sum = 0;
      const double* plane = out + (i - p0) * plane_cells;
      for (std::size_t c = 0; c < plane_cells; ++c) sum += scale.to_fixed(plane[c]);
      local_sums[i] = sum;
    }
    if (memory.sink) memory.sink(p0, p1, out);
  });
  core::FixedInt mine = 0;
  for (const core::FixedInt v : local_sums) mine += v;
  result.mass_total = scale.to_double(mpi::exact_total(s.comm, mine));
  result.particles_outside = s.comm.sum<std::uint64_t>(s.outside);
  result.particles_in = s.comm.sum<std::uint64_t>(s.n_input - s.outside);
  return result;
}

DepositResult deposit(const GridGeometry& g, Assignment a, const mpi::BlockDecomposition& blocks,
                      std::span<const double> position, std::span<const double> mass, const mpi::Comm& comm,
                      int threads, const DepositMemory& memory) {
  Deposit d(g, a, blocks, comm, threads);
  d.add(position, mass);
  return d.finish(memory);
}

}  // namespace phew::grid
