#include <phew/particles/projection.hpp>

#include <phew/core/raw_vector.hpp>

#include <phew/core/error.hpp>
#include <phew/core/fixed_sum.hpp>
#include <phew/grid/deposit.hpp>
#include <phew/mesh/amr_deposit.hpp>
#include <phew/mesh/octree.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/mpi/exact_sums.hpp>

#include <cmath>

namespace phew::particles {

OctreeParams octree_params(double refine_particles, int levels, int buffer) {
  mesh::check_refinement_options(levels, refine_particles, buffer);
  return {levels, refine_particles, buffer};
}

grid::GridGeometry projection_geometry(const SnapshotInfo& info, const std::array<std::int64_t, 3>& shape,
                                       const std::optional<grid::Box>& region) {
  grid::GridGeometry g;
  g.shape = shape;
  if (region) {
    g.origin = region->origin;
    g.extent = region->extent;
    g.periodic = false;
  } else if (info.periodic) {
    g.extent = info.box_size;
    g.periodic = true;
  } else if (info.format == "phew-particles" && info.box_size[0] > 0 && info.box_size[1] > 0 && info.box_size[2] > 0) {
    g.extent = info.box_size;  // phew's own file of an open box gives its bounds: particles must lie inside
    g.periodic = false;
  } else {
    // A Gadget-4 run without PERIODIC keeps its BoxSize, but that does not bound the particles (docs/cli.md:
    // an open box needs --region).
    throw core::Error::usage(
        "{}: the snapshot has no periodic box (BoxSize {:g}{}); give the grid's extent with --region",
        info.files.front(), info.box_size[0], info.box_size[0] > 0 ? ", open boundaries" : "");
  }
  return g;
}

namespace {

// A finite open box bounds its particles: one outside is an error, not something to drop.
void check_inside_open_box(const SnapshotInfo& info, const ParticleSet& particles, const ProjectionParams& params,
                           const mpi::Comm& comm) {
  const grid::GridGeometry& geometry = params.geometry;
  if (geometry.periodic || params.region) return;
  mpi::agree(comm, [&] {
    for (std::size_t i = 0; i < particles.size(); ++i)
      for (std::size_t d = 0; d < 3; ++d) {
        const double x = particles.position[3 * i + d];
        if (x < geometry.origin[d] || x >= geometry.origin[d] + geometry.extent[d])
          throw core::Error::input("{}: a particle at {:g} lies outside the non-periodic box [0, {:g}) in axis {}",
                                   info.files.front(), x, geometry.extent[d], "xyz"[d]);
      }
  });
}

// The particles' smallest and largest mass, over every rank.
std::pair<double, double> mass_range(const ParticleSet& particles, const mpi::Comm& comm) {
  double min_mass = particles.size() ? particles.mass[0] : INFINITY,
         max_mass = particles.size() ? particles.mass[0] : 0;
  for (double m : particles.mass) {
    min_mass = std::min(min_mass, m);
    max_mass = std::max(max_mass, m);
  }
  return {comm.min(min_mass), comm.max(max_mass)};
}

void check_some_inside(const SnapshotInfo& info, const grid::GridGeometry& geometry, std::uint64_t particles_in,
                       const mpi::Comm& comm) {
  mpi::agree(comm, [&] {
    if (particles_in == 0)
      throw core::Error::input(
          "{}: no particle of the selection lies in the region [{:g}, {:g}) x [{:g}, {:g}) x [{:g}, {:g})",
          info.files.front(), geometry.origin[0], geometry.origin[0] + geometry.extent[0], geometry.origin[1],
          geometry.origin[1] + geometry.extent[1], geometry.origin[2], geometry.origin[2] + geometry.extent[2]);
  });
}

// What grid.h5 records of the grid, the particles and the snapshot (units, time, cosmology).
grid::GridMeta grid_meta(const SnapshotInfo& info, const ProjectionParams& params, double mass_total,
                         std::uint64_t particles_in, std::pair<double, double> mass_range) {
  const grid::GridGeometry& geometry = params.geometry;
  grid::GridMeta meta;
  meta.geometry = geometry;
  meta.assignment = to_string(params.assignment);
  meta.total_mass = mass_total;
  meta.mean_density = mass_total / (geometry.extent[0] * geometry.extent[1] * geometry.extent[2]);
  meta.n_particles = particles_in;
  meta.particle_mass = mass_range.first == mass_range.second ? mass_range.first : 0.0;
  meta.density_units = info.units.density_name();
  meta.length_units = info.units.length_name();
  meta.mass_units = info.units.mass_name();
  meta.time = info.time;
  meta.redshift = info.redshift;
  meta.comoving = info.comoving;
  if (info.cosmology) {
    meta.omega_m = info.cosmology->omega_m;
    meta.omega_lambda = info.cosmology->omega_lambda;
    meta.hubble_param = info.cosmology->hubble_param;
    meta.critical_density = info.cosmology->critical_density(info.comoving ? info.time : 1.0, info.units);
  }
  return meta;
}

// The uniform grid: the particles are never whole beside the clouds.
Projection project_to_grid(const SnapshotReader& reader, const std::vector<int>& types, const ProjectionParams& params,
                           const mpi::Comm& comm, const core::PhaseReport& phase) {
  const SnapshotInfo& info = reader.info();
  const grid::GridGeometry& geometry = params.geometry;
  const mpi::BlockDecomposition blocks(geometry.shape, comm.size());

  // This rank's share (as read_share) a chunk at a time, each filed by the deposit and let go: the
  // particles are never whole beside the clouds. The checks agree chunk by chunk.
  core::enter(phase, "read");
  grid::Deposit deposit(geometry, params.assignment, blocks, comm, params.threads);
  double min_mass = INFINITY, max_mass = 0;
  for_each_share_chunk(reader, types, FieldSelection{}, kReadChunk, comm, [&](const ParticleSet& chunk) {
    check_inside_open_box(info, chunk, params, comm);
    for (double m : chunk.mass) {
      min_mass = std::min(min_mass, m);
      max_mass = std::max(max_mass, m);
    }
    deposit.add(chunk.position, chunk.mass);
  });
  const std::pair<double, double> masses{comm.min(min_mass), comm.max(max_mass)};

  core::enter(phase, "deposit");
  const double inv_volume = 1.0 / geometry.cell_volume();
  const mpi::BlockDecomposition::Box box = blocks.box(comm.rank());
  const auto plane_cells = static_cast<std::size_t>(box.size()[1] * box.size()[2]);
  grid::DepositMemory memory;
  core::RawVector<float> single;
  if (params.single_precision) {
    // Allocated once the clouds are in place, left unwritten until its planes are summed: pages become
    // resident as the clouds' pages go back.
    memory.before_sums = [&] { single.resize(static_cast<std::size_t>(box.cells())); };
    // Each block's densities rounded to float32 as it is finished: the value writing a float64 grid as
    // float32 gives, without the float64 grid.
    memory.sink = [&](std::size_t p0, std::size_t p1, const double* mass) {
      float* out = single.data() + p0 * plane_cells;
      for (std::size_t c = 0; c < (p1 - p0) * plane_cells; ++c) out[c] = static_cast<float>(mass[c] * inv_volume);
    };
  }
  grid::DepositResult dep = deposit.finish(memory);
  check_some_inside(info, geometry, dep.particles_in, comm);

  mesh::BlockField block{blocks, {}};
  if (params.single_precision) {
    block.density = std::move(single);
  } else {
    for (double& v : dep.mass) v *= inv_volume;  // now density
    block.density = std::move(dep.mass);
  }
  return {grid_meta(info, params, dep.mass_total, dep.particles_in, masses), std::move(block), dep.particles_outside};
}

// The adaptive mesh: the deposit takes this rank's share whole.
Projection project_to_octree(const SnapshotInfo& info, ParticleSet particles, const ProjectionParams& params,
                             const OctreeParams& octree, const mpi::Comm& comm, const core::PhaseReport& phase) {
  check_inside_open_box(info, particles, params, comm);
  const auto masses = mass_range(particles, comm);
  // RAMSES counts m_refine in units of its particle mass (mass_sph); with unequal masses, their mean,
  // summed exactly (fixed point) so that every split of the particles among ranks gives the same bits.
  const std::uint64_t n_selected = comm.sum(static_cast<std::uint64_t>(particles.size()));
  double unit = masses.first;
  if (masses.first != masses.second) {
    const core::FixedScale scale = core::FixedScale::for_total(
        std::max(std::abs(masses.first), std::abs(masses.second)) * static_cast<double>(n_selected));
    core::FixedInt selected_mass = 0;
    for (const double m : particles.mass) selected_mass += scale.to_fixed(m);
    unit = scale.to_double(mpi::exact_total(comm, selected_mass)) /
           static_cast<double>(std::max<std::uint64_t>(1, n_selected));
  }

  core::enter(phase, "refine");
  mesh::RefinementParams refinement{octree.levels, octree.refine_particles, unit, octree.buffer, params.assignment};
  // The deposit takes the positions and masses, and lets them go once filed.
  mesh::AmrDeposit dep =
      mesh::deposit_on_octree(params.geometry, refinement, std::move(particles.position), std::move(particles.mass),
                              comm, params.threads, params.single_precision);
  particles = ParticleSet{};
  check_some_inside(info, params.geometry, dep.particles_in, comm);

  mesh::LeafField leaves;
  leaves.refinement = {octree.levels, octree.refine_particles, octree.refine_particles * unit, octree.buffer,
                       dep.leaves_per_level};
  leaves.keys = std::move(dep.leaves);
  leaves.density = std::move(dep.density);
  return {grid_meta(info, params, dep.mass_total, dep.particles_in, masses), std::move(leaves), dep.particles_outside};
}

}  // namespace

Projection project(const SnapshotReader& reader, const std::vector<int>& types, const ProjectionParams& params,
                   const std::optional<OctreeParams>& octree, const mpi::Comm& comm, const core::PhaseReport& phase) {
  if (!octree) return project_to_grid(reader, types, params, comm, phase);
  core::enter(phase, "read");
  return project_to_octree(reader.info(), read_share(reader, types, FieldSelection{}, comm), params, *octree, comm,
                           phase);
}

}  // namespace phew::particles
