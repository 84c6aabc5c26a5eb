#include <phew/unbind/gas.hpp>

#include <phew/core/units.hpp>
#include <phew/mpi/route.hpp>
#include <phew/mpi/sorted_runs.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>

namespace phew::unbind {
namespace {

constexpr double kHydrogenFraction = 0.76;  // X of primordial gas
constexpr double kGamma = 5.0 / 3.0;
constexpr std::uint64_t kGasChunk = std::uint64_t{1} << 20;  // gas particles a rank reads at a time

// A gas particle's share of one object's sums: of the object it is bound to (own) or of an ancestor.
struct Contribution {
  std::int64_t object;
  std::uint64_t id;
  std::int8_t own;
  double mass, mass_temperature, star_forming_mass;
};

// A gas particle read from the snapshot, on its way to the rank holding its row.
struct GasParticle {
  std::uint64_t id;
  double mass, temperature, star_forming_mass;
};

}  // namespace

double fully_ionised_electron_abundance() { return 1 + (1 - kHydrogenFraction) / (2 * kHydrogenFraction); }

double gas_temperature(double u, double velocity_cm_per_s, double electron_abundance) {
  const double mu = 4 / (1 + 3 * kHydrogenFraction + 4 * kHydrogenFraction * electron_abundance);
  return (kGamma - 1) * mu * core::units::kProtonMassG * u * velocity_cm_per_s * velocity_cm_per_s /
         core::units::kBoltzmannCgs;
}

GasColumns add_gas_properties(std::vector<model::BoundObject>& objects, std::span<const model::BoundParticle> particles,
                              const particles::SnapshotReader& reader, const mpi::Comm& comm) {
  const particles::SnapshotInfo& info = reader.info();
  GasColumns columns{info.has_internal_energy, info.has_star_formation_rate};
  if ((!columns.temperature && !columns.star_forming) || info.total(0) == 0) return {};
  // Which rank holds each particle's row and each object's.
  const mpi::SortedRuns particle_runs(particles.empty(), particles.empty() ? 0 : particles.front().id, comm);
  const mpi::SortedRuns object_runs(objects.empty(),
                                    objects.empty() ? 0 : static_cast<std::uint64_t>(objects.front().id), comm);
  // Every object's parent (a few numbers per object), for the inclusive sums of the ancestors.
  std::vector<std::array<std::int64_t, 2>> links;
  for (const model::BoundObject& o : objects) links.push_back({o.id, o.parent});
  std::map<std::int64_t, std::int64_t> parent_of;
  for (const auto& [id, parent] : comm.all_gatherv<std::array<std::int64_t, 2>>(links)) parent_of[id] = parent;

  std::vector<Contribution> contributions;
  particles::FieldSelection fields;
  fields.ids = fields.gas = true;
  fields.positions = false;  // a particle meets its row by ID
  const double velocity_cm_per_s = info.units.velocity_cm_per_s;
  std::vector<GasParticle> mine, here, send;  // a chunk's particles, and those that reach this rank
  particles::for_each_share_chunk(reader, {0}, fields, kGasChunk, comm, [&](const particles::ParticleSet& gas) {
    mine.resize(gas.size());
    for (std::size_t i = 0; i < gas.size(); ++i) {
      const double n_e =
          gas.electron_abundance.empty() ? fully_ionised_electron_abundance() : gas.electron_abundance[i];
      mine[i] = {gas.id[i], gas.mass[i],
                 gas.internal_energy.empty() ? 0.0 : gas_temperature(gas.internal_energy[i], velocity_cm_per_s, n_e),
                 !gas.star_formation_rate.empty() && gas.star_formation_rate[i] > 0 ? gas.mass[i] : 0.0};
    }
    mpi::route_into(
        comm, std::span<const GasParticle>(mine), [&](const GasParticle& p) { return particle_runs.owner(p.id); }, here,
        send);
    for (const GasParticle& p : here) {
      const auto row = std::lower_bound(particles.begin(), particles.end(), p.id,
                                        [](const model::BoundParticle& r, std::uint64_t id) { return r.id < id; });
      if (row == particles.end() || row->id != p.id || row->object <= 0) continue;
      std::int8_t own = 1;
      for (std::int64_t o = row->object; o > 0; o = parent_of.at(o), own = 0)
        contributions.push_back({o, p.id, own, p.mass, p.mass * p.temperature, p.star_forming_mass});
    }
  });
  contributions = mpi::route(comm, contributions, [&](const Contribution& c) {
    return object_runs.owner(static_cast<std::uint64_t>(c.object));
  });
  // Summed in particle-ID order per object, whatever the ranks.
  std::sort(contributions.begin(), contributions.end(), [](const Contribution& a, const Contribution& b) {
    return a.object != b.object ? a.object < b.object : a.id < b.id;
  });
  std::size_t c = 0;
  for (model::BoundObject& o : objects) {
    double m = 0, mt = 0, sf = 0, m_all = 0, mt_all = 0, sf_all = 0;
    while (c < contributions.size() && contributions[c].object < o.id) ++c;
    for (; c < contributions.size() && contributions[c].object == o.id; ++c) {
      const Contribution& x = contributions[c];
      m_all += x.mass, mt_all += x.mass_temperature, sf_all += x.star_forming_mass;
      if (x.own) m += x.mass, mt += x.mass_temperature, sf += x.star_forming_mass;
    }
    if (columns.temperature) {
      o.gas_temperature = m > 0 ? mt / m : 0.0;
      o.gas_temperature_inclusive = m_all > 0 ? mt_all / m_all : 0.0;
    }
    o.star_forming_gas_mass = sf;
    o.star_forming_gas_mass_inclusive = sf_all;
  }
  return columns;
}

}  // namespace phew::unbind
