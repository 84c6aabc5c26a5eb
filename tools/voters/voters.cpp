#include "voters.hpp"

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/grid_file.hpp"
#include "mpi/agree.hpp"
#include "mpi/route.hpp"
#include "mpi/sort.hpp"
#include "particles/snapshot.hpp"
#include "gravity/forest.hpp"
#include "gravity/long_range.hpp"
#include "phasespace/voters.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

namespace phew {
namespace {

using Vec3 = std::array<double, 3>;

struct Peak {
  std::int64_t id, parent_clump;
  Vec3 x, v;
  double mass;
};

// A particle as the voter search needs it (positions as stored; the rest physical).
struct Particle {
  std::uint64_t id;
  double x[3], v[3], phi, acc[3], m;
};

struct VoterRow {
  std::int64_t peak, rank;
  std::uint64_t particle_id;
  double energy;
};

struct PeakRow {
  std::int64_t id, n_voters, n_candidates;
  double search_radius, a0[3];
};

// Points in a box, bucketed on a uniform grid for radius queries (periodic-aware).
class CellList {
 public:
  CellList(const std::vector<Particle>& p, const GridGeometry& g, double h) : p_(p), g_(g) {
    for (std::size_t d = 0; d < 3; ++d) {
      n_[d] = std::max<std::int64_t>(1, std::min<std::int64_t>(256, static_cast<std::int64_t>(g.extent[d] / h)));
      size_[d] = g.extent[d] / static_cast<double>(n_[d]);
    }
    for (std::size_t i = 0; i < p.size(); ++i) cells_[key(cell_of(p[i].x))].push_back(i);
  }
  // Indices of the points within r of x (minimum image), in ascending index order.
  std::vector<std::size_t> within(const Vec3& x, double r) const {
    std::vector<std::size_t> out;
    const auto c = cell_of(x.data());
    std::array<std::int64_t, 3> reach{};
    for (std::size_t d = 0; d < 3; ++d) reach[d] = std::min<std::int64_t>(n_[d] / 2 + 1, static_cast<std::int64_t>(std::ceil(r / size_[d])));
    std::vector<std::int64_t> seen;
    for (std::int64_t a = -reach[0]; a <= reach[0]; ++a)
      for (std::int64_t b = -reach[1]; b <= reach[1]; ++b)
        for (std::int64_t e = -reach[2]; e <= reach[2]; ++e) {
          std::array<std::int64_t, 3> q{c[0] + a, c[1] + b, c[2] + e};
          bool skip = false;
          for (std::size_t d = 0; d < 3; ++d) {
            if (q[d] < 0 || q[d] >= n_[d]) {
              if (!g_.periodic) skip = true;
              q[d] = fold_index(q[d], n_[d], true);
            }
          }
          if (skip) continue;
          const std::int64_t k = key(q);
          if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;  // small grids wrap onto themselves
          seen.push_back(k);
          auto it = cells_.find(k);
          if (it == cells_.end()) continue;
          for (std::size_t i : it->second) {
            double r2 = 0;
            for (std::size_t d = 0; d < 3; ++d) {
              const double dx = minimum_image(p_[i].x[d] - x[d], g_.extent[d], g_.periodic);
              r2 += dx * dx;
            }
            if (r2 <= r * r) out.push_back(i);
          }
        }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::array<std::int64_t, 3> cell_of(const double* x) const {
    std::array<std::int64_t, 3> c{};
    for (std::size_t d = 0; d < 3; ++d) {
      c[d] = static_cast<std::int64_t>(std::floor((x[d] - g_.origin[d]) / size_[d]));
      c[d] = fold_index(c[d], n_[d], g_.periodic);
    }
    return c;
  }
  std::int64_t key(const std::array<std::int64_t, 3>& c) const { return (c[0] * n_[1] + c[1]) * n_[2] + c[2]; }

  const std::vector<Particle>& p_;
  const GridGeometry& g_;
  std::array<std::int64_t, 3> n_{};
  std::array<double, 3> size_{};
  std::unordered_map<std::int64_t, std::vector<std::size_t>> cells_;
};

// How the x axis is shared: rank r handles the peaks in the x-range of its slab of planes of `geo`.
struct XPartition {
  XPartition(const GridGeometry& g, int ranks) : geo(g), slabs(g.shape[0], ranks) {}
  int owner(double x) const {
    const std::int64_t n = geo.shape[0];
    const auto i = static_cast<std::int64_t>(std::floor((x - geo.origin[0]) / geo.cell_size()[0]));
    return slabs.owner(fold_index(i, n, geo.periodic));
  }
  // Rank r's x-range; in an open box the end ranks also take everything beyond the grid.
  std::array<double, 2> range(int r) const {
    const double h = geo.cell_size()[0];
    std::array<double, 2> x{geo.origin[0] + static_cast<double>(slabs.begin(r)) * h, geo.origin[0] + static_cast<double>(slabs.end(r)) * h};
    if (!geo.periodic && slabs.begin(r) == 0) x[0] = -std::numeric_limits<double>::infinity();
    if (!geo.periodic && slabs.end(r) == geo.shape[0]) x[1] = std::numeric_limits<double>::infinity();
    return x;
  }
  GridGeometry geo;
  mpi::SlabDecomposition slabs;
};

// How the potential is computed (docs/tools/voters.md, "The computed potential").
struct GravitySetup {
  GridGeometry box;                   // the forest's box: the snapshot's (periodic) or the particles' bounding box
  std::array<std::int64_t, 3> cubes{};
  double cube_reach = 0;              // how far beyond a rank's candidates it must hold whole cubes
  GridGeometry mesh;                  // periodic: the particle-mesh
  double r_split = 0;                 // periodic: the TreePM split scale
  std::unique_ptr<gravity::LongRangeField> mesh_field;  // periodic: the long-range part
  std::string description;
};

constexpr double kSplitInCells = 1.25;  // r_s in mesh cells (Gadget's ASMTH)

GravitySetup gravity_setup(const VotersOptions& opt, const GridGeometry& geo, const SnapshotInfo& info,
                           std::uint64_t n_particles, double R_max, double G, const ParticleSet& ps, const mpi::Comm& comm) {
  GravitySetup gs;
  if (info.periodic) {  // the snapshot's whole box, also when the peaks' grid covers a region of it
    const GridGeometry whole{{1, 1, 1}, {0, 0, 0}, info.box_size, true};
    std::int64_t n = opt.pm_mesh;
    if (n == 0) {  // about one cell per particle, a power of two, 32 .. 512
      n = 32;
      while (n < 512 && static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) < static_cast<double>(n_particles)) n *= 2;
    }
    gs.mesh = GridGeometry{{n, n, n}, whole.origin, whole.extent, true};
    const auto h = gs.mesh.cell_size();
    gs.r_split = kSplitInCells * std::max({h[0], h[1], h[2]});
    const double r_cut = gravity::PairForce::kCutInSplits * gs.r_split;
    gs.box = whole;
    for (std::size_t d = 0; d < 3; ++d)
      gs.cubes[d] = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(whole.extent[d] / r_cut)), 3, 128);
    gs.cube_reach = whole.extent[0] / static_cast<double>(gs.cubes[0]) * (1 + 1e-9);
    // The mesh is sampled at every member of a candidate's tree group (accumulate_group), and a group
    // can reach a whole cube beyond the candidate: the ghost planes must cover R_max + one cube.
    gs.mesh_field = std::make_unique<gravity::LongRangeField>(gs.mesh, G, gs.r_split, ps.position, ps.mass,
                                                             R_max + gs.cube_reach, comm);
    gs.description = fmt::format("computed: TreePM, long range on a {}^3 mesh (split scale {:.6g}), short range by "
                                 "Barnes-Hut trees (theta {})",
                                 n, gs.r_split, opt.theta);
    return gs;
  }
  // Open box: cubes over the particles' bounding box, so that no particle lies outside its cube.
  std::array<double, 3> lo{}, hi{};
  for (std::size_t d = 0; d < 3; ++d) {
    double l = std::numeric_limits<double>::infinity(), u = -l;
    for (std::size_t i = 0; i < ps.size(); ++i) {
      l = std::min(l, ps.position[3 * i + d]);
      u = std::max(u, ps.position[3 * i + d]);
    }
    lo[d] = comm.min(l);
    hi[d] = comm.max(u);
    if (!(hi[d] >= lo[d])) lo[d] = hi[d] = geo.origin[d];
  }
  gs.box.periodic = false;
  gs.box.shape = {1, 1, 1};
  double side = 0;
  for (std::size_t d = 0; d < 3; ++d) {
    gs.box.origin[d] = lo[d];
    gs.box.extent[d] = (hi[d] - lo[d]) * (1 + 1e-9) + 1e-300;
    side = std::max(side, gs.box.extent[d] / 16);
  }
  gs.cubes = {16, 16, 16};
  gs.cube_reach = side / opt.theta + side;  // a cube (side l) is opened only by points within l / theta of its mass centre
  gs.description = fmt::format("computed: Barnes-Hut tree over all particles (open box, theta {})", opt.theta);
  return gs;
}

}  // namespace

void declare_voters_options(CLI::App& app, VotersOptions& opt) {
  app.add_option("peaks", opt.peaks, "Peaks from deblend (peaks.h5)")->required();
  app.add_option("snapshot", opt.snapshot, "The snapshot the peaks were found in")->required();
  app.add_option("-n,--n-voters", opt.n_voters, "Voters per peak")->capture_default_str();
  app.add_option("-R,--search-radius", opt.search_radius,
                 "Largest search radius (snapshot length units; default: half the radius at 200x the mean density "
                 "of the most massive peak)");
  app.add_option("--min-radius", opt.min_radius, "Smallest search radius, however close the nearest peak")
      ->capture_default_str();
  app.add_option("--potential", opt.potential, "Where the potential comes from: auto, snapshot or compute")
      ->capture_default_str();
  app.add_option("--pm-mesh", opt.pm_mesh,
                 "Computed potential, periodic box: particle-mesh cells per side (default: about one per particle, "
                 "32 to 512)");
  app.add_option("--theta", opt.theta, "Computed potential: Barnes-Hut opening angle")->capture_default_str();
  app.add_option("--softening", opt.softening,
                 "Computed potential: Plummer softening (default: 1/30 of the mean interparticle spacing, at most a "
                 "tenth of a grid cell)");
  app.add_option("--types", opt.types, "Particle types (auto: dark matter)")->capture_default_str();
  app.add_flag("--no-boost", opt.no_boost, "Rank by the plain potential (to compare; not for production)");
}

void run_voters(const VotersOptions& opt, Context& ctx) {
  const mpi::Comm& comm = ctx.comm();
  if (opt.n_voters < 1) throw Error::usage("--n-voters {} must be at least 1", opt.n_voters);
  if (opt.search_radius < 0 || opt.min_radius < 0) throw Error::usage("search radii must not be negative");
  if (opt.potential != "auto" && opt.potential != "snapshot" && opt.potential != "compute")
    throw Error::usage("--potential '{}': expected auto, snapshot or compute", opt.potential);
  if (!(opt.theta > 0)) throw Error::usage("--theta must be > 0");
  if (opt.pm_mesh != 0 && (opt.pm_mesh < 32 || opt.pm_mesh > 4096)) throw Error::usage("--pm-mesh {}: expected 32 to 4096", opt.pm_mesh);

  ctx.phase("open");
  std::unique_ptr<SnapshotReader> reader;
  std::vector<int> types;
  GridMeta grid;
  std::vector<Peak> peaks;
  mpi::agree(comm, [&] {
    const io::File f = io::File::open_read(opt.peaks);
    grid = io::read_grid_attributes(f, "/grid", false);
    const auto id = f.read<std::int64_t>("/peaks/id");
    const auto x = f.read<double>("/peaks/position");
    const auto v = f.read<double>("/peaks/velocity");
    const auto m = f.read<double>("/peaks/mass");
    const auto parent = f.read<std::int64_t>("/peaks/parent_clump");
    for (std::size_t i = 0; i < id.size(); ++i)
      peaks.push_back({id[i], parent[i], {x[3 * i], x[3 * i + 1], x[3 * i + 2]}, {v[3 * i], v[3 * i + 1], v[3 * i + 2]}, m[i]});
    reader = open_snapshot({opt.snapshot});
    const SnapshotInfo& info = reader->info();
    if (!info.has_velocities) throw Error::input("{}: the snapshot has no velocities", opt.snapshot);
    types = selected_types(info, opt.types);
    check_snapshot_matches_grid(info, grid, opt.snapshot, opt.peaks);
    if (opt.potential == "snapshot" && !(info.has_potential && info.has_acceleration))
      throw Error::input("{}: --potential snapshot, but the snapshot has no Potential and Acceleration", opt.snapshot);
  });
  mpi::agree(comm, [&] {
    if (!comm.root()) return;
    ctx.manifest().add_input(manifest::check_phew_input(opt.peaks, {"peaks"}));
    for (const auto& in : manifest::snapshot_inputs_in_chain(opt.peaks, reader->info().files)) ctx.manifest().add_input(in);
  });
  const SnapshotInfo& info = reader->info();
  const GridGeometry& geo = grid.geometry;
  if (geo.periodic)  // a fitted peak position may lie just outside the box
    for (Peak& p : peaks)
      for (std::size_t d = 0; d < 3; ++d)
        p.x[d] = geo.origin[d] + wrap_position(p.x[d] - geo.origin[d], geo.extent[d]);
  const bool stored = opt.potential == "snapshot" || (opt.potential == "auto" && info.has_potential && info.has_acceleration);
  // Physical units: comoving positions scale by a, Gadget velocities u = v/sqrt(a), and Gadget's stored
  // comoving potential and acceleration by 1/a and 1/a^2.
  const double a = info.comoving ? info.time : 1.0;
  const double G = info.units.gravitational_constant();
  // Default softening: 1/30 of the mean interparticle spacing (a usual choice for dark-matter runs),
  // at most a tenth of a grid cell.
  const double spacing = std::cbrt(geo.extent[0] * geo.extent[1] * geo.extent[2] /
                                   std::max<double>(1.0, static_cast<double>(info.total(types))));
  const double softening = opt.softening >= 0 ? opt.softening : std::min(spacing / 30.0, 0.1 * geo.cell_size()[0]);

  // Search radii: min(R, 1/4 of the distance to the nearest other peak), at least --min-radius. Peaks
  // deblended from the same patch share its place and are told apart by velocity, not by the radius,
  // so they do not shrink each other's sphere.
  double R = opt.search_radius;
  if (R == 0) {
    double m_max = 0;
    for (const Peak& p : peaks) m_max = std::max(m_max, p.mass);
    R = grid.mean_density > 0 && m_max > 0 ? 0.5 * std::cbrt(3 * m_max / (4 * M_PI * 200 * grid.mean_density)) : geo.cell_size()[0];
  }
  std::vector<double> r_s(peaks.size(), R);
  {
    std::vector<Particle> as_points;
    for (const Peak& p : peaks) as_points.push_back({static_cast<std::uint64_t>(p.id), {p.x[0], p.x[1], p.x[2]}, {}, 0, {}, 0});
    const CellList near(as_points, geo, 4 * R);
    for (std::size_t i = 0; i < peaks.size(); ++i) {
      for (std::size_t j : near.within(peaks[i].x, 4 * R)) {
        if (j == i || peaks[j].parent_clump == peaks[i].parent_clump) continue;
        double d2 = 0;
        for (std::size_t d = 0; d < 3; ++d) {
          const double dx = minimum_image(peaks[j].x[d] - peaks[i].x[d], geo.extent[d], geo.periodic);
          d2 += dx * dx;
        }
        r_s[i] = std::min(r_s[i], 0.25 * std::sqrt(d2));
      }
      r_s[i] = std::max(r_s[i], opt.min_radius);
    }
  }

  double R_max = 0;
  for (double r : r_s) R_max = std::max(R_max, r);

  ctx.phase("read");
  FieldSelection fields;
  fields.ids = fields.velocities = true;
  fields.potential = fields.acceleration = stored;
  ParticleSet ps = read_share(*reader, types, fields, comm);
  if (stored)
    mpi::agree(comm, [&] {
      for (double v : ps.potential)
        if (!std::isfinite(v)) throw Error::input("{}: the snapshot's Potential has a non-finite value", opt.snapshot);
    });

  // The computed potential. Periodic: TreePM, the long-range part on a mesh (`pm` mesh cells per side),
  // the short-range part from trees over cubes at least r_cut wide. Open: Barnes-Hut over the whole box,
  // cubes' monopoles shared as a top tree. Both are computed in the snapshot's (comoving) coordinates
  // and converted to physical units with the factors above.
  GravitySetup gs;
  if (!stored) {
    ctx.phase("long-range");
    gs = gravity_setup(opt, geo, info, info.total(types), R_max, G, ps, comm);
  }

  ctx.phase("distribute");
  // Rank r handles the peaks in its x-range of `part` and holds every particle its candidates (and,
  // when computing, their sources) may need.
  const XPartition part(gs.mesh_field ? gs.mesh : geo, comm.size());
  auto held_x = [&](int r) {
    auto [lo, hi] = part.range(r);
    const double margin = R_max + (stored ? 0.0 : gs.cube_reach);
    return std::array<double, 2>{lo - margin, hi + margin};
  };
  // Destinations by x-bin (a cube of the forest, or a plane of the partition), fixed per bin.
  const GridGeometry bins = stored ? part.geo : gs.box;
  const std::int64_t n_bins = stored ? part.geo.shape[0] : gs.cubes[0];
  const double bin_width = bins.extent[0] / static_cast<double>(n_bins);
  std::vector<std::vector<int>> destinations(static_cast<std::size_t>(n_bins));
  for (std::int64_t bx = 0; bx < n_bins; ++bx)
    for (int r = 0; r < comm.size(); ++r)
      if (part.slabs.planes(r) > 0 && gravity::Forest::cube_meets(bins, bin_width, bx, held_x(r)))
        destinations[static_cast<std::size_t>(bx)].push_back(r);
  auto bin_of = [&](double x) {
    const auto i = static_cast<std::int64_t>(std::floor((x - bins.origin[0]) / bin_width));
    return static_cast<std::size_t>(fold_index(i, n_bins, bins.periodic));
  };
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(comm.size()), 0);
  for (std::size_t i = 0; i < ps.size(); ++i)
    for (int r : destinations[bin_of(ps.position[3 * i])]) ++counts[static_cast<std::size_t>(r)];
  std::vector<std::uint64_t> offset = mpi::offsets_of(counts);
  std::vector<Particle> send(offset.back() + counts.back());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    Particle p{ps.id[i], {}, {}, 0, {0, 0, 0}, ps.mass[i]};
    for (std::size_t d = 0; d < 3; ++d) {
      p.x[d] = ps.position[3 * i + d];
      p.v[d] = ps.velocity[3 * i + d] * std::sqrt(a);
      if (stored) p.acc[d] = ps.acceleration[3 * i + d] / (a * a);
    }
    if (stored) p.phi = ps.potential[i] / a;
    for (int r : destinations[bin_of(p.x[0])]) send[offset[static_cast<std::size_t>(r)]++] = p;
  }
  ps = ParticleSet{};  // every particle now lives in `send`
  const std::vector<Particle> local = comm.all_to_all<Particle>(send, counts);
  send = {};
  const CellList cells(local, geo, std::max(R_max / 2, geo.cell_size()[0]));

  ctx.phase("potential");
  // Computed potential and acceleration of local particles, filled in when first a candidate.
  std::unique_ptr<gravity::Forest> forest;
  if (!stored) {
    std::vector<gravity::Source> sources(local.size());
    for (std::size_t i = 0; i < local.size(); ++i)
      sources[i] = {{local[i].x[0], local[i].x[1], local[i].x[2]}, local[i].m, local[i].id};
    forest = std::make_unique<gravity::Forest>(gs.box, gs.cubes, held_x(comm.rank()), std::move(sources),
                                               gravity::PairForce(G, softening, gs.mesh_field ? gs.r_split : 0),
                                               gravity::Forest::Params{opt.theta, 8});
    if (!gs.mesh_field) {
      forest->share_cube_moments(comm, [&](std::int64_t key) {
        const std::int64_t cx = key / (gs.cubes[1] * gs.cubes[2]);
        return part.owner(gs.box.origin[0] + (static_cast<double>(cx) + 0.5) * gs.box.extent[0] / static_cast<double>(gs.cubes[0])) ==
               comm.rank();
      });
    }
  }
  std::uint64_t n_computed = 0;
  std::vector<char> done(stored ? 0 : local.size(), 0);
  std::vector<double> phi(stored ? 0 : local.size()), acc(stored ? 0 : 3 * local.size());
  // The potential of a candidate's whole tree group is computed at once (accumulate_group) and kept.
  auto compute_at = [&](std::size_t j) {
    if (done[j]) return;
    forest->accumulate_group(j, [&](std::size_t k, double p, const double* g) {
      double acc_k[3] = {g[0], g[1], g[2]};
      if (gs.mesh_field) {
        double pl = 0, gl[3];
        gs.mesh_field->sample(local[k].x, pl, gl);
        p += pl;
        for (std::size_t d = 0; d < 3; ++d) acc_k[d] += gl[d];
      }
      phi[k] = p / a;  // comoving -> physical
      for (std::size_t d = 0; d < 3; ++d) acc[3 * k + d] = acc_k[d] / (a * a);
      done[k] = 1;
      ++n_computed;
    });
  };

  ctx.phase("voters");
  std::vector<VoterRow> voter_rows;
  std::vector<PeakRow> peak_rows;
  std::int64_t short_peaks = 0;
  for (std::size_t i = 0; i < peaks.size(); ++i) {
    const Peak& pk = peaks[i];
    if (part.owner(pk.x[0]) != comm.rank()) continue;
    // Candidates, sorted by particle ID so the result is the same whichever rank holds them.
    std::vector<std::size_t> near = cells.within(pk.x, r_s[i]);
    std::sort(near.begin(), near.end(), [&](std::size_t p, std::size_t q) { return local[p].id < local[q].id; });
    near.erase(std::unique(near.begin(), near.end(), [&](std::size_t p, std::size_t q) { return local[p].id == local[q].id; }), near.end());
    std::vector<Candidate> cand;
    for (std::size_t j : near) {
      const Particle& p = local[j];
      Candidate c{p.id, {}, {p.v[0], p.v[1], p.v[2]}, p.phi, {p.acc[0], p.acc[1], p.acc[2]}};
      for (std::size_t d = 0; d < 3; ++d) c.dx[d] = a * minimum_image(p.x[d] - pk.x[d], geo.extent[d], geo.periodic);
      if (!stored) {
        compute_at(j);
        c.potential = phi[j];
        for (std::size_t d = 0; d < 3; ++d) c.acceleration[d] = acc[3 * j + d];
      }
      cand.push_back(c);
    }
    const Vec3 vb{pk.v[0] * std::sqrt(a), pk.v[1] * std::sqrt(a), pk.v[2] * std::sqrt(a)};
    const VoterChoice vc = choose_voters(cand, vb, static_cast<std::size_t>(opt.n_voters), !opt.no_boost);
    if (vc.id.size() < static_cast<std::size_t>(opt.n_voters)) ++short_peaks;
    for (std::size_t k = 0; k < vc.id.size(); ++k)
      voter_rows.push_back({pk.id, static_cast<std::int64_t>(k), vc.id[k], vc.energy[k]});
    peak_rows.push_back({pk.id, static_cast<std::int64_t>(vc.id.size()), static_cast<std::int64_t>(cand.size()), r_s[i],
                         {vc.a0[0], vc.a0[1], vc.a0[2]}});
  }
  if (!stored) log::info("potential computed at {} particles", comm.sum<std::uint64_t>(n_computed));
  short_peaks = comm.sum<std::int64_t>(short_peaks);
  if (short_peaks > 0)
    log::warn("{} peaks have fewer than {} candidates and so fewer voters (flagged by n_voters)", short_peaks, opt.n_voters);

  ctx.phase("write");
  voter_rows = mpi::sort(comm, std::move(voter_rows), [](const VoterRow& p, const VoterRow& q) {
    return p.peak != q.peak ? p.peak < q.peak : p.rank < q.rank;
  });
  peak_rows = mpi::sort(comm, std::move(peak_rows), [](const PeakRow& p, const PeakRow& q) { return p.id < q.id; });
  io::AtomicOutput out(ctx.output(), comm);
  io::File f = io::File::create(out.temp_path(), comm);
  f.create_group("/grid");
  io::write_grid_attributes(f, grid, "/grid");
  std::vector<std::int64_t> vpeak, pid, nv, nc;
  std::vector<std::uint64_t> vid;
  std::vector<double> ve, rs, a0;
  for (const VoterRow& r : voter_rows) {
    vpeak.push_back(r.peak);
    vid.push_back(r.particle_id);
    ve.push_back(r.energy);
  }
  for (const PeakRow& r : peak_rows) {
    pid.push_back(r.id);
    nv.push_back(r.n_voters);
    nc.push_back(r.n_candidates);
    rs.push_back(r.search_radius);
    a0.insert(a0.end(), r.a0, r.a0 + 3);
  }
  f.create_group("/voters");
  f.write_distributed<std::int64_t>("/voters/peak", vpeak, comm);
  f.write_distributed<std::uint64_t>("/voters/particle_id", vid, comm);
  f.write_distributed<double>("/voters/binding_energy", ve, comm);
  f.write_attribute("/voters/binding_energy", "units", "(" + info.units.velocity_name() + ")^2, physical");
  f.create_group("/peaks");
  f.write_distributed<std::int64_t>("/peaks/id", pid, comm);
  f.write_distributed<double>("/peaks/search_radius", rs, comm);
  f.write_distributed<double>("/peaks/a0", a0, comm, 3);
  f.write_distributed<std::int64_t>("/peaks/n_voters", nv, comm);
  f.write_distributed<std::int64_t>("/peaks/n_candidates", nc, comm);
  f.write_attribute("/peaks/search_radius", "units", grid.length_units);
  f.write_attribute("/peaks/a0", "units", info.units.velocity_name() + "^2 / (" + info.units.length_name() + "), physical");
  const std::string source = stored ? std::string("snapshot Potential and Acceleration")
                                    : fmt::format("{}, Plummer softening {:.6g}", gs.description, softening);
  f.write_attribute("/", "potential_source", source);
  f.write_attribute<std::int64_t>("/", "n_voters_requested", opt.n_voters);
  f.write_attribute("/", "time", info.time);
  f.write_attribute<std::int8_t>("/", "boosted", opt.no_boost ? 0 : 1);

  auto& m = ctx.manifest();
  m.parameter("search_radius_used", R, grid.length_units);
  m.parameter("potential_source", source);
  m.parameter("softening_used", softening, grid.length_units);
  m.parameter("gravitational_constant", G);
  m.summary("n_peaks", comm.sum<std::int64_t>(static_cast<std::int64_t>(pid.size())));
  m.summary("n_voters", comm.sum<std::int64_t>(static_cast<std::int64_t>(vid.size())));
  m.summary("n_peaks_with_fewer_voters", short_peaks);
  ctx.finish_output(f, out);
}

}  // namespace phew
