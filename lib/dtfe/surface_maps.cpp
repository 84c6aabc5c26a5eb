#include "dtfe/surface_maps.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "dtfe/decomposition.hpp"
#include "grid/particle_index.hpp"
#include "mpi/agree.hpp"
#include "mpi/route.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace phew::dtfe {
namespace {

using Vec3 = std::array<double, 3>;

// A field's numbers travel between ranks as one row of doubles: the statistics, then the map.
enum Stat : std::size_t {
  kIndex, kParticles, kVertices, kTets, kFlat, kAbsorbed, kSteps, kWindowMass, kMapMass,
  kTriangulation, kInterpolation, kPredicted, kRank, kSample, kStats
};

bool has_box(const SurfaceMapsInput& in) { return in.box_size[0] > 0 && in.box_size[1] > 0 && in.box_size[2] > 0; }

// The periodic box, a closed box (every particle must lie in it), or the particles' bounding box.
Box domain_of(const SurfaceMapsInput& in, bool periodic, const mpi::Comm& comm) {
  Box domain;
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
              throw Error::input("{}: a particle at {:g} lies outside the non-periodic box [0, {:g}] in axis {}",
                                 in.snapshot, x, in.box_size[d], "xyz"[d]);
          }
      });
    }
    return domain;
  }
  for (std::size_t d = 0; d < 3; ++d) {
    double a = std::numeric_limits<double>::infinity(), b = -a;
    for (std::size_t i = 0; i < n; ++i) a = std::min(a, in.position[3 * i + d]), b = std::max(b, in.position[3 * i + d]);
    const double lo = comm.min(a), hi = comm.max(b);
    domain.origin[d] = lo;
    domain.extent[d] = std::max(hi - lo, 1e-300) * (1 + 1e-12);
  }
  return domain;
}

// Centres wrapped into a periodic box; outside an open one, an input error.
void place_centres(SurfaceMapsInput& in, const Box& domain) {
  for (std::size_t i = 0; i < in.centres.size(); ++i) {
    Vec3& c = in.centres[i];
    for (std::size_t d = 0; d < 3; ++d) {
      if (domain.periodic) {
        c[d] = wrap_position(c[d], domain.extent[d]);
        continue;
      }
      const double lo = domain.origin[d], hi = domain.origin[d] + domain.extent[d];
      if (c[d] < lo || c[d] > hi)
        throw Error::input("{}: centre {} ({:g}, {:g}, {:g}) lies outside the {} [{:g}, {:g}] in axis {} of a non-periodic snapshot",
                           in.centres_file, i + 1, c[0], c[1], c[2], has_box(in) ? "box" : "particles' extent", lo, hi, "xyz"[d]);
    }
  }
}

// The fields whose centre lies in this rank's block, with their particle counts; refuses (on every
// rank) the lowest field anywhere with fewer than 4 particles, and a largest field too large for memory.
std::vector<FieldTask> count_fields(const SurfaceMapsInput& in, const ParticleIndex& index, const BlockDecomposition& blocks,
                                    const Vec3& half, const SurfaceMapsParams& params, double depth, const mpi::Comm& comm) {
  std::vector<FieldTask> tasks;
  for (std::size_t i = 0; i < in.centres.size(); ++i)
    if (blocks.owner(in.centres[i]) == comm.rank()) tasks.push_back({i, index.count(in.centres[i], half)});
  const auto few = std::find_if(tasks.begin(), tasks.end(), [](const FieldTask& t) { return t.n_particles < 4; });
  if (few != tasks.end()) {
    const Vec3& c = in.centres[few->index];
    const Error e = Error::input("field {} at ({:g}, {:g}, {:g}) holds {} particle(s): a triangulation needs at least 4 (a larger --size or --depth?)",
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
  const double maps_held = 2.0 * (static_cast<double>(tasks.size()) + static_cast<double>(n_fields) / comm.size() + 1) * map_bytes;
  const int node_ranks = mpi::ranks_on_node(comm);
  mpi::agree(comm, [&] {
    check_memory((static_cast<double>(n_max) * triangulation_bytes_per_point(params.map.backend) + maps_held +
                  40.0 * static_cast<double>(index.size())) * node_ranks,
                 available_memory_bytes(),
                 fmt::format("the largest field ({} particles, {} triangulation) and {} maps of {}x{}",
                             log::thousands(static_cast<long long>(n_max)), to_string(params.map.backend),
                             n_fields, params.resolution, params.resolution));
  });
  log::info("{} fields of {}x{} pixels, side {:g}, depth {:g}, margin {:g}, line of sight {}; up to {} particles per field",
            n_fields, params.resolution, params.resolution, params.size, depth, params.margin, "xyz"[params.axis],
            log::thousands(static_cast<long long>(n_max)));
  return tasks;
}

// A field that failed (coplanar, too few distinct particles): the lowest, on every rank.
void agree_on_failed_fields(const std::vector<FieldOutcome>& outcomes, const SurfaceMapsInput& in, const mpi::Comm& comm) {
  const FieldOutcome* first = nullptr;
  for (const auto& o : outcomes)
    if (!o.error.empty() && (!first || o.index < first->index)) first = &o;
  if (!first) return mpi::agree_first(comm, 0, nullptr);
  const Vec3& c = in.centres[first->index];
  const Error e = Error::input("field {} at ({:g}, {:g}, {:g}): {}", in.ids[first->index], c[0], c[1], c[2], first->error);
  mpi::agree_first(comm, static_cast<std::int64_t>(first->index), &e);
}

// Field i's row is written by the rank whose block of consecutive fields holds it (blocks in rank order).
std::size_t block_begin(std::size_t n, int ranks, int r) { return n * static_cast<std::size_t>(r) / static_cast<std::size_t>(ranks); }

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
  const std::vector<double> got = mpi::route_rows<double>(comm, outcomes.size(), row, writer, [&](std::size_t i, double* out) {
    const FieldOutcome& o = outcomes[i];
    const FieldResult& r = o.result;
    const double stats[kStats] = {static_cast<double>(o.index), static_cast<double>(r.n_particles), static_cast<double>(r.n_vertices),
                                  static_cast<double>(r.n_tets), static_cast<double>(r.n_flat_tets), static_cast<double>(r.n_absorbed),
                                  static_cast<double>(r.steps), r.window_mass, r.map_mass, r.seconds_triangulation,
                                  r.seconds_interpolation, o.predicted, static_cast<double>(o.rank), o.sample ? 1.0 : 0.0};
    std::copy(stats, stats + kStats, out);
    std::copy(r.sigma.begin(), r.sigma.end(), out + kStats);
  });
  const std::size_t first = begins[static_cast<std::size_t>(comm.rank())], mine = begins[static_cast<std::size_t>(comm.rank()) + 1] - first;
  stat.assign(mine * kStats, 0.0);
  sigma.assign(mine * pixels, 0.0);
  for (std::size_t at = 0; at + row <= got.size(); at += row) {
    const auto i = static_cast<std::size_t>(got[at + kIndex]) - first;
    std::copy(got.begin() + static_cast<long>(at), got.begin() + static_cast<long>(at + kStats), stat.begin() + static_cast<long>(i * kStats));
    std::copy(got.begin() + static_cast<long>(at + kStats), got.begin() + static_cast<long>(at + row), sigma.begin() + static_cast<long>(i * pixels));
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

SurfaceMaps surface_maps(SurfaceMapsInput in, const SurfaceMapsParams& params, const mpi::Comm& comm, const PhaseReport& phase) {
  const auto axes = view_axes(params.axis);
  const auto w = static_cast<std::size_t>(axes[2]);
  const bool periodic = in.periodic && has_box(in);
  if (params.depth && periodic && *params.depth > in.box_size[w] * (1 + 1e-12))
    throw Error::usage("--depth {:g} exceeds the periodic box ({:g}) along the line of sight: use --depth box", *params.depth,
                       in.box_size[w]);
  const Box domain = domain_of(in, periodic, comm);
  SurfaceMaps out;
  SurfaceMapsSummary& sum = out.summary;
  sum.periodic = periodic;
  sum.depth = params.depth ? *params.depth : periodic ? in.box_size[w] : 2 * domain.extent[w];
  place_centres(in, domain);
  const std::size_t n_fields = in.centres.size();
  auto geometry = [&](std::size_t i) {
    FieldGeometry g;
    g.center = in.centres[i];
    g.size = params.size;
    g.depth = sum.depth;
    g.margin = params.margin;
    g.resolution = params.resolution;
    g.axis = params.axis;
    return g;
  };
  // The window's half-widths along the snapshot's axes (a hair wider for the ghost zones, so that
  // rounding at their edge can never leave out a particle the window holds).
  Vec3 half{}, ghost{};
  const auto hv = geometry(0).half_width();
  for (std::size_t k = 0; k < 3; ++k) half[static_cast<std::size_t>(axes[k])] = hv[k];
  for (std::size_t d = 0; d < 3; ++d) ghost[d] = half[d] * (1 + 1e-6) + 1e-12 * domain.extent[d];

  enter(phase, "distribute");
  const BlockDecomposition blocks(domain, ghost, comm.size());
  sum.decomposition = blocks.dims();
  const auto n_total = comm.sum<std::uint64_t>(in.mass.size());
  LocalParticles local = distribute(in.position, in.mass, blocks, comm);
  in.position = {};
  in.mass = {};
  const ParticleIndex index(local.position, local.mass, domain, std::min({half[0], half[1], half[2]}) / 2);
  local = LocalParticles{};
  const auto held = comm.sum<std::uint64_t>(index.size());
  log::verbose("decomposition {}x{}x{}; {} particles held with ghost zones ({:.2f}x)", blocks.dims()[0], blocks.dims()[1],
               blocks.dims()[2], log::thousands(static_cast<long long>(held)), static_cast<double>(held) / static_cast<double>(n_total));

  enter(phase, "count");
  const std::vector<FieldTask> tasks = count_fields(in, index, blocks, half, params, sum.depth, comm);

  enter(phase, "fields");
  const auto outcomes = run_fields(
      tasks, [&](std::size_t i) { return field_points(index, geometry(i)); },
      [&](std::size_t i, const FieldPoints& points) { return surface_density(points, geometry(i), params.map); },
      params.schedule, comm, sum.report);
  agree_on_failed_fields(outcomes, in, comm);

  enter(phase, "gather");
  const std::size_t pixels = static_cast<std::size_t>(params.resolution) * static_cast<std::size_t>(params.resolution);
  std::vector<double> stat;
  io::Maps& maps = out.maps;
  gather(outcomes, n_fields, pixels, comm, stat, maps.sigma);
  const std::size_t first = block_begin(n_fields, comm.size(), comm.rank()), mine = stat.size() / kStats;
  for (std::size_t i = 0; i < mine; ++i) {
    const double* s = &stat[i * kStats];
    auto count = [&](Stat k) { return static_cast<std::int64_t>(s[k]); };
    maps.rows.push_back({in.centres[first + i], in.ids[first + i], params.size, sum.depth, params.margin, params.resolution,
                         params.axis, count(kParticles), count(kVertices), count(kTets), s[kWindowMass], s[kMapMass]});
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
