#include <phew/dtfe/surface_maps.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>
#include <phew/dtfe/decomposition.hpp>
#include <phew/dtfe/silhouette.hpp>
#include <phew/grid/particle_index.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/mpi/route.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>

namespace phew::dtfe {
namespace {

using Vec3 = std::array<double, 3>;

// The margin rule's levels stop here at the latest (margin_at_level overflows to infinity before).
constexpr int kMaxMarginLevel = 2200;

// A field's numbers travel between ranks as one row of doubles: the statistics, then the map.
enum Stat : std::size_t {
  kIndex,
  kParticles,
  kVertices,
  kTets,
  kFlat,
  kAbsorbed,
  kSteps,
  kOutside,
  kWindowMass,
  kMapMass,
  kTriangulation,
  kInterpolation,
  kPredicted,
  kRank,
  kSample,
  kStats
};

bool has_box(const SurfaceMapsInput& in) { return in.box_size[0] > 0 && in.box_size[1] > 0 && in.box_size[2] > 0; }

// The particles' bounding box over all ranks (collective).
struct Extent {
  Vec3 lo{}, hi{};
};
Extent extent_of(const SurfaceMapsInput& in, const mpi::Comm& comm) {
  Extent e;
  const std::size_t n = in.position.size() / 3;
  for (std::size_t d = 0; d < 3; ++d) {
    double a = std::numeric_limits<double>::infinity(), b = -a;
    for (std::size_t i = 0; i < n; ++i)
      a = std::min(a, in.position[3 * i + d]), b = std::max(b, in.position[3 * i + d]);
    e.lo[d] = comm.min(a);
    e.hi[d] = comm.max(b);
  }
  return e;
}

// The periodic box, a closed box (every particle must lie in it), or the particles' bounding box.
grid::Box domain_of(const SurfaceMapsInput& in, bool periodic, const Extent& extent, const mpi::Comm& comm) {
  grid::Box domain;
  domain.periodic = periodic;
  const std::size_t n = in.position.size() / 3;
  if (has_box(in)) {
    domain.extent = in.box_size;
    if (!periodic) {
      mpi::agree(comm, [&] {
        for (std::size_t i = 0; i < n; ++i)
          for (std::size_t d = 0; d < 3; ++d) {
            const double x = in.position[3 * i + d];
            if (x < 0 || x > in.box_size[d])
              throw core::Error::input("{}: a particle at {:g} lies outside the non-periodic box [0, {:g}] in axis {}",
                                       in.snapshot, x, in.box_size[d], "xyz"[d]);
          }
      });
    }
    return domain;
  }
  for (std::size_t d = 0; d < 3; ++d) {
    domain.origin[d] = extent.lo[d];
    domain.extent[d] = std::max(extent.hi[d] - extent.lo[d], 1e-300) * (1 + 1e-12);
  }
  return domain;
}

// Centres wrapped into a periodic box; outside an open one, an input error.
void place_centres(SurfaceMapsInput& in, const grid::Box& domain) {
  for (std::size_t i = 0; i < in.centres.size(); ++i) {
    Vec3& c = in.centres[i];
    for (std::size_t d = 0; d < 3; ++d) {
      if (domain.periodic) {
        c[d] = grid::wrap_position(c[d], domain.extent[d]);
        continue;
      }
      const double lo = domain.origin[d], hi = domain.origin[d] + domain.extent[d];
      if (c[d] < lo || c[d] > hi)
        throw core::Error::input(
            "{}: centre {} ({:g}, {:g}, {:g}) lies outside the {} [{:g}, {:g}] in axis {} of a non-periodic snapshot",
            in.centres_file, i + 1, c[0], c[1], c[2], has_box(in) ? "box" : "particles' extent", lo, hi, "xyz"[d]);
    }
  }
}

// The fields whose centre lies in this rank's block, with their particle counts; refuses (on every
// rank) the lowest field anywhere with fewer than 4 particles, and a largest field too large for memory.
template <typename HalfOf>
std::vector<FieldTask> count_fields(const SurfaceMapsInput& in, const grid::ParticleIndex& index,
                                    const VolumeDecomposition& blocks, const HalfOf& half_of,
                                    const SurfaceMapsParams& params, const SurfaceMapsSummary& sum,
                                    const mpi::Comm& comm) {
  std::vector<FieldTask> tasks;
  for (std::size_t i = 0; i < in.centres.size(); ++i)
    if (blocks.owner(in.centres[i]) == comm.rank()) tasks.push_back({i, index.count(in.centres[i], half_of(i))});
  const auto few = std::find_if(tasks.begin(), tasks.end(), [](const FieldTask& t) { return t.n_particles < 4; });
  if (few != tasks.end()) {
    const Vec3& c = in.centres[few->index];
    const core::Error e = core::Error::input(
        "field {} at ({:g}, {:g}, {:g}) holds {} particle(s): a triangulation needs at least 4 (a larger --size or "
        "--depth?)",
        in.ids[few->index], c[0], c[1], c[2], static_cast<long long>(few->n_particles));
    mpi::agree_first(comm, static_cast<std::int64_t>(few->index), &e);
  } else {
    mpi::agree_first(comm, 0, nullptr);
  }
  std::uint64_t n_max = 0;
  for (const auto& t : tasks) n_max = std::max(n_max, t.n_particles);
  n_max = comm.max(n_max);
  const std::size_t n_fields = in.centres.size();
  const double map_bytes = 8.0 * params.resolution * static_cast<double>(params.resolution);
  const double maps_held =
      2.0 * (static_cast<double>(tasks.size()) + static_cast<double>(n_fields) / comm.size() + 1) * map_bytes;
  const int node_ranks = mpi::ranks_on_node(comm);
  mpi::agree(comm, [&] {
    core::check_memory((static_cast<double>(n_max) * triangulation_bytes_per_point(params.map.backend) + maps_held +
                        40.0 * static_cast<double>(index.size())) *
                           node_ranks,
                       core::available_memory_bytes(),
                       fmt::format("the largest field ({} particles, {} triangulation) and {} maps of {}x{}",
                                   core::log::thousands(static_cast<long long>(n_max)), to_string(params.map.backend),
                                   n_fields, params.resolution, params.resolution));
  });
  const std::string margin = sum.margin_min == sum.margin_max
                                 ? fmt::format("{:g}", sum.margin_max)
                                 : fmt::format("{:g} to {:g}", sum.margin_min, sum.margin_max);
  core::log::info(
      "{} fields of {}x{} pixels, side {:g}, depth {:g}, margin {}, line of sight {}; up to {} particles per field",
      n_fields, params.resolution, params.resolution, params.size, sum.depth, margin, "xyz"[params.axis],
      core::log::thousands(static_cast<long long>(n_max)));
  return tasks;
}

// A field that failed (coplanar, too few distinct particles): the lowest, on every rank.
void agree_on_failed_fields(const std::vector<FieldOutcome>& outcomes, const SurfaceMapsInput& in,
                            const mpi::Comm& comm) {
  const FieldOutcome* first = nullptr;
  for (const auto& o : outcomes)
    if (!o.error.empty() && (!first || o.index < first->index)) first = &o;
  if (!first) return mpi::agree_first(comm, 0, nullptr);
  const Vec3& c = in.centres[first->index];
  const core::Error e =
      core::Error::input("field {} at ({:g}, {:g}, {:g}): {}", in.ids[first->index], c[0], c[1], c[2], first->error);
  mpi::agree_first(comm, static_cast<std::int64_t>(first->index), &e);
}

// Field i's row is written by the rank whose block of consecutive fields holds it (blocks in rank order).
std::size_t block_begin(std::size_t n, int ranks, int r) {
  return n * static_cast<std::size_t>(r) / static_cast<std::size_t>(ranks);
}

// Each field's statistics and map to the rank that writes its row: that rank's block of fields, as
// rows [kStats] and maps [pixels].
void gather(const std::vector<FieldOutcome>& outcomes, std::size_t n_fields, std::size_t pixels, const mpi::Comm& comm,
            std::vector<double>& stat, std::vector<double>& sigma) {
  const std::size_t row = kStats + pixels;
  std::vector<std::size_t> begins(static_cast<std::size_t>(comm.size()) + 1);
  for (int r = 0; r <= comm.size(); ++r) begins[static_cast<std::size_t>(r)] = block_begin(n_fields, comm.size(), r);
  auto writer = [&](std::size_t i) {
    return static_cast<int>(std::upper_bound(begins.begin(), begins.end(), outcomes[i].index) - begins.begin()) - 1;
  };
  const std::vector<double> got =
      mpi::route_rows<double>(comm, outcomes.size(), row, writer, [&](std::size_t i, double* out) {
        const FieldOutcome& o = outcomes[i];
        const FieldResult& r = o.result;
        const double stats[kStats] = {static_cast<double>(o.index),
                                      static_cast<double>(r.n_particles),
                                      static_cast<double>(r.n_vertices),
                                      static_cast<double>(r.n_tets),
                                      static_cast<double>(r.n_flat_tets),
                                      static_cast<double>(r.n_absorbed),
                                      static_cast<double>(r.steps),
                                      static_cast<double>(r.n_outside),
                                      r.window_mass,
                                      r.map_mass,
                                      r.seconds_triangulation,
                                      r.seconds_interpolation,
                                      o.predicted,
                                      static_cast<double>(o.rank),
                                      o.sample ? 1.0 : 0.0};
        std::copy(stats, stats + kStats, out);
        std::copy(r.sigma.begin(), r.sigma.end(), out + kStats);
      });
  const std::size_t first = begins[static_cast<std::size_t>(comm.rank())],
                    mine = begins[static_cast<std::size_t>(comm.rank()) + 1] - first;
  stat.assign(mine * kStats, 0.0);
  sigma.assign(mine * pixels, 0.0);
  for (std::size_t at = 0; at + row <= got.size(); at += row) {
    const auto i = static_cast<std::size_t>(got[at + kIndex]) - first;
    std::copy(got.begin() + static_cast<long>(at), got.begin() + static_cast<long>(at + kStats),
              stat.begin() + static_cast<long>(i * kStats));
    std::copy(got.begin() + static_cast<long>(at + kStats), got.begin() + static_cast<long>(at + row),
              sigma.begin() + static_cast<long>(i * pixels));
  }
}

// Totals over every field in field order, and the schedule's work per rank.
void summarise(const std::vector<double>& stat, std::size_t n_fields, const mpi::Comm& comm, SurfaceMapsSummary& s) {
  const auto all = comm.all_gatherv<double>(stat);
  for (std::size_t i = 0; i < n_fields; ++i) {
    const double* x = &all[i * kStats];
    s.n_particles += static_cast<std::uint64_t>(x[kParticles]);
    s.steps += static_cast<std::uint64_t>(x[kSteps]);
    s.flat_tetrahedra += static_cast<std::uint64_t>(x[kFlat]);
    s.absorbed += static_cast<std::uint64_t>(x[kAbsorbed]);
    s.pixels_outside += static_cast<std::uint64_t>(x[kOutside]);
    s.fields_outside += x[kOutside] > 0 ? 1 : 0;
    s.map_mass += x[kMapMass];
    s.window_mass += x[kWindowMass];
    s.seconds_triangulation += x[kTriangulation];
    s.seconds_interpolation += x[kInterpolation];
  }
  const auto busy = comm.all_gather(s.report.busy_seconds);
  s.busy_seconds_max = *std::max_element(busy.begin(), busy.end());
  s.busy_seconds_mean = std::accumulate(busy.begin(), busy.end(), 0.0) / static_cast<double>(busy.size());
  s.fields_moved = comm.sum<std::uint64_t>(s.report.fields_sent);
}

}  // namespace

SurfaceMaps surface_maps(SurfaceMapsInput in, const SurfaceMapsParams& params, const mpi::Comm& comm,
                         const core::PhaseReport& phase) {
  const auto axes = view_axes(params.axis);
  const auto u = static_cast<std::size_t>(axes[0]), v = static_cast<std::size_t>(axes[1]),
             w = static_cast<std::size_t>(axes[2]);
  const bool periodic = in.periodic && has_box(in);
  if (params.depth && periodic && *params.depth > in.box_size[w] * (1 + 1e-12))
    throw core::Error::usage("--depth {:g} exceeds the periodic box ({:g}) along the line of sight: use --depth box",
                             *params.depth, in.box_size[w]);
  const Extent extent = periodic ? Extent{} : extent_of(in, comm);
  const grid::Box domain = domain_of(in, periodic, extent, comm);
  SurfaceMaps out;
  SurfaceMapsSummary& sum = out.summary;
  sum.periodic = periodic;
  sum.depth = params.depth ? *params.depth : periodic ? in.box_size[w] : 2 * domain.extent[w];
  place_centres(in, domain);
  const std::size_t n_fields = in.centres.size();
  const auto n_total = comm.sum<std::uint64_t>(in.mass.size());

  // Field i's window with the margin of rule level k (docs/tools/dtfe-surface.md, "Margin").
  auto geometry_at = [&](std::size_t i, int k) {
    FieldGeometry g;
    if (i < n_fields) g.center = in.centres[i];
    g.size = params.size;
    g.depth = sum.depth;
    g.margin = params.auto_margin ? margin_at_level(params.margin, k) : params.margin;
    g.resolution = params.resolution;
    g.axis = params.axis;
    return g;
  };
  // The window's half-widths along the snapshot's axes.
  auto half_at = [&](std::size_t i, int k) {
    Vec3 half{};
    const auto hv = geometry_at(i, k).half_width();
    for (std::size_t a = 0; a < 3; ++a) half[static_cast<std::size_t>(axes[a])] = hv[a];
    return half;
  };
  // Whether field i's window at level k holds every particle across the line of sight (an open box),
  // by the test ParticleIndex::visit applies to the outermost particles.
  auto holds_all = [&](std::size_t i, int k) {
    if (periodic) return false;
    const Vec3 half = half_at(i, k);
    const Vec3& c = in.centres[i];
    return extent.lo[u] - c[u] >= -half[u] && extent.hi[u] - c[u] < half[u] && extent.lo[v] - c[v] >= -half[v] &&
           extent.hi[v] - c[v] < half[v];
  };
  // The rule's last level per field: its window holds every particle across (an open box: a larger
  // one sees nothing more), or reaches twice the periodic box beyond the map (every particle of the
  // slab then has images on all sides of the widened map).
  std::vector<int> last(n_fields, 0);
  if (params.auto_margin)
    for (std::size_t i = 0; i < n_fields; ++i) {
      int& k = last[i];
      if (periodic)
        while (margin_at_level(params.margin, k) < 2 * std::max(in.box_size[u], in.box_size[v]) && k < kMaxMarginLevel)
          ++k;
      else
        while (!holds_all(i, k) && k < kMaxMarginLevel) ++k;
    }
  const int max_last = n_fields ? *std::max_element(last.begin(), last.end()) : 0;
  // Ghost zones first for a margin of twice the mean spacing of the particles in projection, where most
  // fields settle; wider in later rounds only if some field needs more.
  int held = 0;
  if (params.auto_margin && n_total > 0) {
    const double projected =
        static_cast<double>(n_total) / (domain.extent[0] * domain.extent[1] * domain.extent[2]) * sum.depth;
    const double spacing = 1 / std::sqrt(projected);
    while (held < max_last && margin_at_level(params.margin, held) < 2 * spacing) ++held;
  }

  core::enter(phase, "distribute");
  std::vector<int> level(n_fields, 0), next(n_fields, 0);
  std::vector<char> settled(n_fields, params.auto_margin ? 0 : 1);
  std::optional<VolumeDecomposition> blocks;
  std::optional<grid::ParticleIndex> index;
  GhostedParticles source{std::move(in.position),
                          std::move(in.mass)};  // this rank's share, later the particles it owns
  core::release(in.position);
  core::release(in.mass);
  for (;;) {
    // Ghost zones of the window's half-widths at the held level (a hair wider, so that rounding at
    // their edge can never leave out a particle the window holds).
    const Vec3 half = half_at(0, held);
    Vec3 ghost{};
    for (std::size_t d = 0; d < 3; ++d) ghost[d] = half[d] * (1 + 1e-6) + 1e-12 * domain.extent[d];
    blocks.emplace(domain, ghost, comm.size());
    GhostedParticles local = distribute(std::exchange(source, GhostedParticles{}), *blocks, comm);
    index.emplace(local.position, local.mass, domain, std::min({half[0], half[1], half[2]}) / 2);
    if (std::all_of(settled.begin(), settled.end(), [](char s) { return s != 0; })) break;
    // The rule on this rank's fields, as far as its particles reach: every level up to the held one
    // (or any, when the map's axes are not cut), so that each test sees the whole window.
    const auto& dims = blocks->dims();
    const int reach = dims[u] == 1 && dims[v] == 1 ? std::numeric_limits<int>::max() : held;
    std::vector<std::array<std::int64_t, 3>> mine;  // field, next level to try, settled
    for (std::size_t i = 0; i < n_fields; ++i) {
      if (settled[i] || blocks->owner(in.centres[i]) != comm.rank()) continue;
      int k = next[i];
      bool done = false;
      for (; k <= std::min(last[i], reach); ++k) {
        const FieldGeometry g = geometry_at(i, k);
        if (k == last[i] || margin_suffices(field_points(*index, g, params.map.threads), g)) {
          done = true;
          break;
        }
      }
      mine.push_back({static_cast<std::int64_t>(i), k, done ? 1 : 0});
    }
    for (const auto& [i, k, done] : comm.all_gatherv<std::array<std::int64_t, 3>>(mine)) {
      next[static_cast<std::size_t>(i)] = static_cast<int>(k);
      if (done) settled[static_cast<std::size_t>(i)] = 1, level[static_cast<std::size_t>(i)] = static_cast<int>(k);
    }
    if (std::all_of(settled.begin(), settled.end(), [](char s) { return s != 0; })) break;
    // Wider ghost zones: each particle goes on from the one rank whose block holds it.
    ++sum.margin_rounds;
    index.reset();
    for (std::size_t p = 0; p < local.mass.size(); ++p) {
      const Vec3 x{local.position[3 * p], local.position[3 * p + 1], local.position[3 * p + 2]};
      if (blocks->owner(x) != comm.rank()) continue;
      source.position.insert(source.position.end(), x.begin(), x.end());
      source.mass.push_back(local.mass[p]);
    }
    held = std::min(held + 2, max_last);
  }
  sum.decomposition = blocks->dims();
  auto geometry = [&](std::size_t i) { return geometry_at(i, level[i]); };
  sum.margin_min = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < n_fields; ++i)
    sum.margin_min = std::min(sum.margin_min, geometry(i).margin),
    sum.margin_max = std::max(sum.margin_max, geometry(i).margin);
  if (n_fields == 0) sum.margin_min = 0;
  const auto n_held = comm.sum<std::uint64_t>(index->size());
  core::log::verbose("decomposition {}x{}x{}; {} particles held with ghost zones ({:.2f}x)", blocks->dims()[0],
                     blocks->dims()[1], blocks->dims()[2], core::log::thousands(static_cast<long long>(n_held)),
                     static_cast<double>(n_held) / static_cast<double>(std::max<std::uint64_t>(n_total, 1)));

  core::enter(phase, "count");
  const std::vector<FieldTask> tasks = count_fields(
      in, *index, *blocks, [&](std::size_t i) { return half_at(i, level[i]); }, params, sum, comm);

  core::enter(phase, "fields");
  const auto outcomes = run_fields(
      tasks,
      [&](std::size_t i) {
        FieldPoints points = field_points(*index, geometry(i), params.map.threads);
        points.empty_outside = holds_all(i, level[i]);
        return points;
      },
      [&](std::size_t i, const FieldPoints& points) { return surface_density(points, geometry(i), params.map); },
      params.schedule, comm, sum.report);
  agree_on_failed_fields(outcomes, in, comm);

  core::enter(phase, "gather");
  const std::size_t pixels = static_cast<std::size_t>(params.resolution) * static_cast<std::size_t>(params.resolution);
  std::vector<double> stat;
  model::Maps& maps = out.maps;
  gather(outcomes, n_fields, pixels, comm, stat, maps.sigma);
  const std::size_t first = block_begin(n_fields, comm.size(), comm.rank()), mine = stat.size() / kStats;
  for (std::size_t i = 0; i < mine; ++i) {
    const double* s = &stat[i * kStats];
    auto count = [&](Stat k) { return static_cast<std::int64_t>(s[k]); };
    maps.rows.push_back({in.centres[first + i], in.ids[first + i], params.size, sum.depth, geometry(first + i).margin,
                         params.resolution, params.axis, count(kParticles), count(kVertices), count(kTets),
                         s[kWindowMass], s[kMapMass]});
    maps.timing.push_back({s[kTriangulation], s[kInterpolation], s[kPredicted], count(kRank), count(kSample)});
  }
  maps.resolution = params.resolution;
  maps.meta.axes = axes;
  maps.meta.mode = to_string(params.map.mode);
  maps.meta.samples = params.map.samples;
  maps.meta.backend = to_string(params.map.backend);
  maps.meta.box_size = in.box_size;
  maps.meta.periodic = periodic;
  summarise(stat, n_fields, comm, sum);
  return out;
}

}  // namespace phew::dtfe
