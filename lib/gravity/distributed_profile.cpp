#include <phew/gravity/distributed_profile.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>
#include <phew/mpi/sort.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace phew::gravity {

namespace {
// A member in the sorted order, held by the rank whose run of that order it falls in.
struct Sorted {
  double r, m;
  std::uint64_t key;
  std::int32_t rank;       // where it came from ...
  std::uint32_t position;  // ... and its place in that rank's `members`
};
}  // namespace

DistributedSphericalProfile::DistributedSphericalProfile(const mpi::Comm& comm, std::span<const double> position,
                                                         std::span<const double> mass,
                                                         std::span<const std::uint64_t> key,
                                                         std::span<const std::size_t> members,
                                                         const std::array<double, 3>& centre, double G,
                                                         double softening)
    : comm_(comm), G_(G), eps2_(softening * softening), members_(members.begin(), members.end()) {
  if (members.size() > std::numeric_limits<std::uint32_t>::max())
    throw core::Error::internal("spherical profile: {} members on one rank", members.size());
  // The radius as SphericalProfile computes it, so that the order and every term are its own.
  std::vector<Sorted> mine(members.size());
  for (std::size_t k = 0; k < members.size(); ++k) {
    const std::size_t i = members[k];
    const double dx = position[3 * i] - centre[0], dy = position[3 * i + 1] - centre[1],
                 dz = position[3 * i + 2] - centre[2];
    mine[k] = {std::sqrt(dx * dx + dy * dy + dz * dz), mass[i], key[i], comm.rank(), static_cast<std::uint32_t>(k)};
  }
  std::vector<Sorted> run = mpi::sort(
      comm, std::move(mine), [](const Sorted& a, const Sorted& b) { return a.r != b.r ? a.r < b.r : a.key < b.key; });
  const std::size_t n = run.size();
  const std::vector<std::uint64_t> sizes = comm.all_gather<std::uint64_t>(n);
  first_.assign(sizes.size() + 1, 0);
  for (std::size_t r = 0; r < sizes.size(); ++r) first_[r + 1] = first_[r] + sizes[r];
  total_ = first_.back();

  radius_.resize(n);
  mass_.resize(n);
  key_.resize(n);
  origin_.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    radius_[k] = run[k].r;
    mass_[k] = run[k].m;
    key_[k] = run[k].key;
    origin_[k] = {run[k].rank, run[k].position};
  }
  core::release(run);  // in columns now: the sums below beside it would hold both
  const auto s_of = [&](std::size_t k) { return std::sqrt(radius_[k] * radius_[k] + eps2_); };
  // The mass before each member, carried forward; m / s(r) from each member on, carried backward; U's
  // sum, forward (SphericalProfile's loops, each cut into the ranks' runs).
  before_.assign(n + 1, 0.0);
  total_mass_ = comm.relay(0.0, [&](double in) {
    before_[0] = in;
    for (std::size_t k = 0; k < n; ++k) before_[k + 1] = before_[k] + mass_[k];
    return before_[n];
  });
  outside_.assign(n + 1, 0.0);
  comm.relay(
      0.0,
      [&](double in) {
        outside_[n] = in;
        for (std::size_t k = n; k-- > 0;) {
          const double s = s_of(k);
          outside_[k] = outside_[k + 1] + (s > 0 ? mass_[k] / s : 0.0);
        }
        return outside_[0];
      },
      /*backward=*/true);
  potential_energy_ = -G_ * comm.relay(0.0, [&](double u) {
    for (std::size_t k = 0; k < n; ++k) {
      const double s = s_of(k);
      if (s > 0) u += mass_[k] * before_[k] / s;
    }
    return u;
  });
}

void DistributedSphericalProfile::potentials(std::vector<double>& phi) const {
  // Each member's potential (SphericalProfile::at_member), sent back to the rank it came from.
  struct Back {
    std::uint32_t position;
    double phi;
  };
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(comm_.size()), 0);
  for (const Origin& o : origin_) ++counts[static_cast<std::size_t>(o.rank)];
  std::vector<std::uint64_t> at(counts.size(), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) at[r] = at[r - 1] + counts[r - 1];
  std::vector<Back> back(origin_.size());
  for (std::size_t k = 0; k < origin_.size(); ++k) {
    const double s = std::sqrt(radius_[k] * radius_[k] + eps2_);
    const double inner = s > 0 ? before_[k] / s : 0.0;
    back[at[static_cast<std::size_t>(origin_[k].rank)]++] = {origin_[k].position, -G_ * (inner + outside_[k + 1])};
  }
  for (const Back& b : comm_.all_to_all<Back>(back, counts)) phi[members_[b.position]] = b.phi;
}

DistributedSphericalProfile::Routes DistributedSphericalProfile::routes() const {
  // The run's requests grouped by origin rank (the run's order within each), answered in that order.
  const auto ranks = static_cast<std::size_t>(comm_.size());
  Routes r;
  r.asked_counts.assign(ranks, 0);
  for (const Origin& o : origin_) ++r.asked_counts[static_cast<std::size_t>(o.rank)];
  std::vector<std::uint64_t> at(ranks, 0);
  for (std::size_t k = 1; k < ranks; ++k) at[k] = at[k - 1] + r.asked_counts[k - 1];
  std::vector<std::uint32_t> asked(origin_.size());
  r.slot.resize(origin_.size());
  for (std::size_t k = 0; k < origin_.size(); ++k) {
    const std::uint64_t j = at[static_cast<std::size_t>(origin_[k].rank)]++;
    asked[j] = origin_[k].position;
    r.slot[j] = k;
  }
  r.asked_of_me = comm_.all_to_all<std::uint32_t>(asked, r.asked_counts);
  const std::vector<std::uint64_t> ones(ranks, 1);
  r.answer_counts = comm_.all_to_all<std::uint64_t>(r.asked_counts, ones);
  return r;
}

std::vector<double> DistributedSphericalProfile::carry(std::span<const double> values, std::size_t width) const {
  std::vector<double> out(origin_.size() * width);
  carry_columns(
      width, [&](std::size_t c, std::size_t k) { return values[k * width + c]; },
      [&](std::size_t c, std::size_t j, double v) { out[j * width + c] = v; });
  return out;
}

double DistributedSphericalProfile::at_radius(double r) const {
  // The members at radius <= r are a prefix of the sorted order: its length is the ranks' counts
  // summed (exactly), and the first rank whose run reaches that place has both sums there.
  const auto local = static_cast<std::uint64_t>(std::upper_bound(radius_.begin(), radius_.end(), r) - radius_.begin());
  const std::uint64_t k = comm_.sum(local);
  int owner = 0;
  while (!(first_[static_cast<std::size_t>(owner)] <= k && k <= first_[static_cast<std::size_t>(owner) + 1])) ++owner;
  double value = 0;
  if (comm_.rank() == owner) {
    const std::size_t j = k - first_[static_cast<std::size_t>(owner)];
    const double s = std::sqrt(r * r + eps2_);
    const double inner = s > 0 ? before_[j] / s : 0.0;
    value = -G_ * (inner + outside_[j]);
  }
  comm_.broadcast(value, owner);
  return value;
}

}  // namespace phew::gravity
