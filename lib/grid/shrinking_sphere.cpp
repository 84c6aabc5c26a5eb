#include <phew/grid/shrinking_sphere.hpp>

#include <phew/core/error.hpp>
#include <phew/core/fixed_sum.hpp>
#include <phew/core/radix_sort.hpp>
#include <phew/core/raw_vector.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace phew::grid {

std::size_t shrinking_sphere_stop(std::size_t n, const ShrinkingSphere& params) {
  const auto fraction = static_cast<std::size_t>(params.stop_fraction * static_cast<double>(n));
  return std::max(params.stop_min, std::min(fraction, params.stop_max));
}

namespace {
using Vec = std::array<double, 3>;

// A sphere's mass and mass-weighted position sums, exact (core::FixedScale): the same bits whichever
// way its particles are gathered.
struct Sums {
  core::FixedInt m = 0, mx[3] = {0, 0, 0};
  std::size_t count = 0;
};

// A particle of the group, as its offset from the reference through the nearest image and its mass and
// mass-weighted offsets in fixed point (2^-62 of the largest of each: 64-bit terms, 128-bit sums).
struct Point {
  const double* x;            // [3]
  const std::int64_t* fixed;  // [4]: mass, then mass times each offset

  double distance2(const Vec& c) const {
    const double dx = x[0] - c[0], dy = x[1] - c[1], dz = x[2] - c[2];
    return dx * dx + dy * dy + dz * dz;
  }
  void add_to(Sums& s) const {
    s.m += fixed[0];
    s.mx[0] += fixed[1];
    s.mx[1] += fixed[2];
    s.mx[2] += fixed[3];
    ++s.count;
  }
};

// The group about the reference. Its offsets are the positions given, read in place, when they are
// already offsets (an open box about the origin: unbind's group, whose positions are its own copy in
// its frame), else computed once; the fixed-point terms are always its own.
class Group {
 public:
  Group(std::span<const double> position, std::span<const double> mass, const Box& box, const Vec& reference,
        const mpi::Comm* spread)
      : n_(mass.size()), terms_(mass.size()), spread_(spread) {
    // x - 0 is x for every double, and the open box's minimum image is the difference itself.
    const bool in_place = !box.periodic && reference == Vec{0, 0, 0};
    if (!in_place) offsets_.resize(3 * n_);
    x_ = in_place ? position.data() : offsets_.data();
    double largest_m = 0, largest_mx = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      largest_m = std::max(largest_m, std::fabs(mass[i]));
      for (std::size_t d = 0; d < 3; ++d) {
        const double x = minimum_image(position[3 * i + d] - reference[d], box.extent[d], box.periodic);
        if (!in_place) offsets_[3 * i + d] = x;
        largest_mx = std::max(largest_mx, std::fabs(mass[i] * x));
        extent_ = std::max(extent_, std::fabs(x));
      }
    }
    if (spread_) {  // the whole group's: maxima are exact in any order
      largest_m = spread_->max(largest_m);
      largest_mx = spread_->max(largest_mx);
      extent_ = spread_->max(extent_);
    }
    m_scale_ = core::FixedScale::for_int64_terms(largest_m);
    mx_scale_ = core::FixedScale::for_int64_terms(largest_mx);
    for (std::size_t i = 0; i < n_; ++i) {
      Terms& t = terms_[i];
      t.fixed[0] = static_cast<std::int64_t>(m_scale_.to_fixed(mass[i]));
      for (std::size_t d = 0; d < 3; ++d)
        t.fixed[1 + d] = static_cast<std::int64_t>(mx_scale_.to_fixed(mass[i] * x_[3 * i + d]));
    }
  }
  Group(const Group&) = delete;  // x_ may point into offsets_
  Group& operator=(const Group&) = delete;
  std::size_t size() const { return n_; }
  Point operator[](std::size_t i) const { return {x_ + 3 * i, terms_[i].fixed}; }
  // f(point, index) for every particle of `members`, or of the group when `all`.
  template <typename F>
  void for_each(std::span<const std::size_t> members, bool all, F&& f) const {
    if (all) {
      for (std::size_t i = 0; i < n_; ++i) f((*this)[i], i);
    } else {
      for (const std::size_t i : members) f((*this)[i], i);
    }
  }
  double extent() const { return extent_; }  // the largest |offset| along any axis (of the whole group)
  // A local sum, count or largest value made the whole group's (itself on one rank). Collective when spread.
  Sums whole(const Sums& s) const {
    if (!spread_ || spread_->size() == 1) return s;
    struct Wire {
      core::FixedInt m, mx[3];
      std::uint64_t count;
    };
    Sums total;
    for (const Wire& w : spread_->all_gather(Wire{s.m, {s.mx[0], s.mx[1], s.mx[2]}, s.count})) {
      total.m += w.m;
      for (std::size_t d = 0; d < 3; ++d) total.mx[d] += w.mx[d];
      total.count += static_cast<std::size_t>(w.count);
    }
    return total;
  }
  std::size_t whole_count(std::size_t n) const {
    return spread_ ? static_cast<std::size_t>(spread_->sum<std::uint64_t>(n)) : n;
  }
  double whole_max(double v) const { return spread_ ? spread_->max(v) : v; }
  // The mass-weighted mean the sums give, or `fallback` when they hold no mass.
  Vec mean(const Sums& s, const Vec& fallback) const {
    const double m = m_scale_.to_double(s.m);
    if (s.count == 0 || !(m > 0)) return fallback;
    return {mx_scale_.to_double(s.mx[0]) / m, mx_scale_.to_double(s.mx[1]) / m, mx_scale_.to_double(s.mx[2]) / m};
  }

 private:
  struct Terms {
    std::int64_t fixed[4];
  };
  std::size_t n_;
  std::vector<double> offsets_;  // [n][3] when the positions are not offsets already
  const double* x_ = nullptr;    // the offsets: offsets_ or the positions given
  std::vector<Terms> terms_;
  double extent_ = 0;
  const mpi::Comm* spread_ = nullptr;
  core::FixedScale m_scale_ = core::FixedScale::for_int64_terms(0), mx_scale_ = core::FixedScale::for_int64_terms(0);
};

// The particles near an anchor, sorted by their distance ρ from it, with the sums of every block of
// kBlock of them in that order added up. A sphere (c, r) with |c - anchor| = off then holds every
// particle with ρ <= r - off and none with ρ > r + off (the triangle inequality): the first are a prefix,
// summed from the blocks, and only the shell between is tested particle by particle. Built again around
// the centre when the sphere reaches beyond the ball, or when the shells scanned since the last build
// add up to kShellPerRebuild times the ball (the centre has drifted and the shells grown thick: a build,
// a sort of the ball, then costs less than scanning them on). A group of n then costs a few sorts of
// shrinking balls and thin shells, not ~1.3 n per step for the ~100-200 steps.
class Ball {
 public:
  static constexpr std::size_t kBlock = 8;

  // `members`: the particles of g whose centre is sought (all of them when `all`).
  Ball(const Group& g, std::span<const std::size_t> members, bool all) : g_(g), members_(members), all_(all) {
    // Rounding of the distances (a few units in the last place of the group's extent and of r) is far
    // below this margin, so a particle taken as surely inside or outside is also so by the rule's own
    // test: the same set as a test of every particle.
    slack_ = 1e-12 * g.extent();
  }

  // Rebuilt around `c`, holding every particle within kReach r of it: from the particles held now when
  // the new ball lies inside the current one.
  void rebuild(const Vec& c, double r) {
    const double reach = kReach * r + 2 * margin(r);
    const bool inside = built_ && offset(c) + reach + margin(r) <= reach_;
    keyed_.clear();
    // Room for every candidate at once, not grown by doubling (pages never written are not resident).
    keyed_.reserve(inside ? index_.size() : all_ ? g_.size() : members_.size());
    const double reach2 = reach * reach;
    auto consider = [&](const Point p, std::size_t i) {
      const double rho2 = p.distance2(c);
      if (rho2 <= reach2) keyed_.push_back(key(std::sqrt(rho2), i));
    };
    if (inside) {
      for (std::size_t k = 0; k < index_.size(); ++k) consider(g_[index_[k]], index_[k]);
    } else {
      g_.for_each(members_, all_, consider);
    }
    // By distance: equal keys in any order (the sums are exact, the sets the rule's), so a small ball is
    // sorted whole words at a time, without the stable sort's buffer.
    if (keyed_.size() < core::kRadixSortMin)
      std::sort(keyed_.begin(), keyed_.end());
    else
      core::radix_sort(
          keyed_, scratch_, [](std::uint64_t k) { return k >> 32; }, 32);
    if (scratch_.capacity() > kScratchKept) core::release(scratch_);  // a big ball's
    // The keys split into the particles' indices and distances. The particles are read from the group
    // through their indices: a copy in distance order (56 bytes a particle, a big halo's largest array
    // in unbind) gained nothing measurable over the steps' shells on unbind_bench.sh's two boxes.
    index_.resize(keyed_.size());
    distance_.resize(keyed_.size());
    for (std::size_t k = 0; k < keyed_.size(); ++k) {
      index_[k] = static_cast<std::uint32_t>(keyed_[k]);
      distance_[k] = key_value(keyed_[k]);
    }
    // The keys are not read again until the next build: a big ball's go back (8 bytes a particle
    // beside the 17 the ball keeps).
    if (keyed_.capacity() > kScratchKept) core::release(keyed_);
    anchor_ = c;
    reach_ = reach;
    built_ = true;
    shell_since_ = 0;
    blocks_.resize(index_.size() / kBlock + 1);
    Sums running;  // a local, stored once a block: not added into the vector particle by particle
    blocks_[0] = running;
    for (std::size_t b = 0; b + 1 < blocks_.size(); ++b) {
      for (std::size_t k = b * kBlock; k < (b + 1) * kBlock; ++k) g_[index_[k]].add_to(running);
      blocks_[b + 1] = running;
    }
  }

  // Whether the ball holds every particle the sphere (c, r) can, and its shells have stayed thin.
  bool serves(const Vec& c, double r) const {
    return built_ && offset(c) + r + margin(r) <= reach_ && shell_since_ <= kShellPerRebuild * index_.size();
  }

  // The sums over the particles within r of c (distance2 <= r^2, as the rule tests each one).
  Sums within(const Vec& c, double r) const {
    const double off = offset(c), m = margin(r), r2 = r * r;
    // Keys are distances rounded to float: ρ within 2^-24 ρ of its key.
    const double key_slack = 0x1p-23 * reach_;
    const std::size_t in = count_keys_up_to(r - off - m - key_slack);
    const std::size_t out = count_keys_up_to(r + off + m + key_slack);
    Sums s = blocks_[in / kBlock];
    for (std::size_t k = in / kBlock * kBlock; k < in; ++k) g_[index_[k]].add_to(s);
    // The shell's sums in locals, added once: kept in registers, where adding into `s` (the caller's
    // memory) made each particle wait for the last one's stores; without a branch, which a shell's
    // particles, inside and outside in no order, mispredict.
    core::FixedInt sm = 0, sx = 0, sy = 0, sz = 0;
    std::size_t count = 0;
    for (std::size_t k = in; k < out; ++k) {
      const Point p = g_[index_[k]];
      const std::int64_t in_mask = -static_cast<std::int64_t>(p.distance2(c) <= r2);
      sm += p.fixed[0] & in_mask;
      sx += p.fixed[1] & in_mask;
      sy += p.fixed[2] & in_mask;
      sz += p.fixed[3] & in_mask;
      count += static_cast<std::size_t>(in_mask & 1);
    }
    s.m += sm;
    s.mx[0] += sx;
    s.mx[1] += sy;
    s.mx[2] += sz;
    s.count += count;
    shell_since_ += out - in;
    return s;
  }

 private:
  // The ball's radius over the sphere's when built, and the shell visits a build is worth, in balls:
  // chosen on unbind_bench.sh's clustered box (1.05-1.2 and 2-8 within 3 % of each other).
  static constexpr double kReach = 1.1;
  static constexpr std::size_t kShellPerRebuild = 4;
  static constexpr std::size_t kScratchKept = std::size_t{1} << 16;  // the sort's room kept between builds

  double margin(double r) const { return slack_ + 1e-12 * r; }
  double offset(const Vec& c) const {
    const double dx = c[0] - anchor_[0], dy = c[1] - anchor_[1], dz = c[2] - anchor_[2];
    return std::sqrt(dx * dx + dy * dy + dz * dz);
  }
  // A distance and an index in one sortable word: a non-negative float's bits order as its value.
  static std::uint64_t key(double rho, std::size_t i) {
    const float f = static_cast<float>(rho);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    return (std::uint64_t{bits} << 32) | static_cast<std::uint32_t>(i);
  }
  static float key_value(std::uint64_t k) {
    const auto bits = static_cast<std::uint32_t>(k >> 32);
    float f = 0;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  // The keys at most t: a search without branches over the distances alone (the branches of a binary
  // search are a coin toss at every level, twice a step).
  std::size_t count_keys_up_to(double t) const {
    const std::size_t size = distance_.size();
    if (size == 0) return 0;
    const float* base = distance_.data();
    for (std::size_t n = size; n > 1;) {
      const std::size_t half = n / 2;
      base = static_cast<double>(base[half]) <= t ? base + half : base;
      n -= half;
    }
    return static_cast<std::size_t>(base - distance_.data()) + (static_cast<double>(*base) <= t ? 1 : 0);
  }

  const Group& g_;
  std::span<const std::size_t> members_;
  bool all_ = true;
  double slack_ = 0;
  bool built_ = false;
  Vec anchor_{0, 0, 0};
  double reach_ = 0;
  mutable std::size_t shell_since_ = 0;
  std::vector<std::uint64_t> keyed_, scratch_;  // a build's (float distance, index) keys, sorted
  std::vector<std::uint32_t> index_;            // the ball's particles by distance: their indices,
  std::vector<float> distance_;                 // their distances (the searches read these alone),
  std::vector<Sums> blocks_;                    // blocks_[b]: the sums of the first b kBlock
};

}  // namespace

// The group the public class holds: Group is private to this file.
struct ShrinkingSphereGroup::Data {
  Data(std::span<const double> position, std::span<const double> mass, const Box& b, const Vec& r,
       const mpi::Comm* spread)
      : group(position, mass, b, r, spread), box(b), reference(r) {}
  Group group;  // made in place: it is not copied or moved
  Box box;
  Vec reference;
};

ShrinkingSphereGroup::ShrinkingSphereGroup(std::span<const double> position, std::span<const double> mass,
                                           const Box& box, const std::array<double, 3>& reference,
                                           const mpi::Comm* spread)
    : data_(std::make_unique<Data>(position, mass, box, reference, spread)) {
  if (mass.size() > std::numeric_limits<std::uint32_t>::max())
    throw core::Error::internal("shrinking sphere: {} particles in one group", mass.size());
}

ShrinkingSphereGroup::~ShrinkingSphereGroup() = default;

std::array<double, 3> ShrinkingSphereGroup::centre(const ShrinkingSphere& params) const {
  return centre_of({}, true, params);
}

std::array<double, 3> ShrinkingSphereGroup::centre(std::span<const std::size_t> members,
                                                   const ShrinkingSphere& params) const {
  return centre_of(members, false, params);
}

std::array<double, 3> ShrinkingSphereGroup::centre_of(std::span<const std::size_t> members, bool all,
                                                      const ShrinkingSphere& params) const {
  return shrink(members, all, nullptr, 0, params).centre;
}

ShrinkingSphereGroup::Found ShrinkingSphereGroup::centre_from(std::span<const std::size_t> members,
                                                              const std::array<double, 3>& start, double radius,
                                                              const ShrinkingSphere& params) const {
  return shrink(members, false, &start, radius, params);
}

ShrinkingSphereGroup::Found ShrinkingSphereGroup::shrink(std::span<const std::size_t> members, bool all,
                                                         const std::array<double, 3>* start, double radius,
                                                         const ShrinkingSphere& params) const {
  const Group& g = data_->group;
  const std::size_t n = g.whole_count(all ? g.size() : members.size());
  Vec c{0, 0, 0};
  double found_radius = 0;
  if (n > 0) {
    const std::size_t stop = shrinking_sphere_stop(n, params);
    Ball ball(g, members, all);
    double r = 0;
    bool warm = false;
    if (start != nullptr && radius > 0) {
      // The start as an offset from the reference, as the particles are.
      for (std::size_t d = 0; d < 3; ++d)
        c[d] = minimum_image((*start)[d] - data_->reference[d], data_->box.extent[d], data_->box.periodic);
      ball.rebuild(c, radius);
      const Sums s = g.whole(ball.within(c, radius));
      warm = s.count >= stop;
      if (warm) {
        c = g.mean(s, c);
        r = radius;
        found_radius = radius;
      }
    }
    if (!warm) {
      Sums sums;
      g.for_each(members, all, [&](const Point p, std::size_t) { p.add_to(sums); });
      c = g.mean(g.whole(sums), Vec{0, 0, 0});
      // The farthest particle's distance: one square root of the largest square (sqrt is correctly
      // rounded, so monotonic: the same value as the largest of every particle's root).
      double r2_max = 0;
      g.for_each(members, all, [&](const Point p, std::size_t) { r2_max = std::max(r2_max, p.distance2(c)); });
      r = std::sqrt(g.whole_max(r2_max));
    }
    // 0.975^3000 ~ 1e-33: a bound that only a group with `stop` particles on one point can reach.
    for (int step = 0; step < 3000 && r > 0; ++step) {
      r *= params.shrink;
      if (!ball.serves(c, r)) ball.rebuild(c, r);
      const Sums s = g.whole(ball.within(c, r));
      if (s.count < stop) break;
      c = g.mean(s, c);
      found_radius = r;
    }
  }
  for (std::size_t d = 0; d < 3; ++d) c[d] = wrap_into(data_->box, data_->reference[d] + c[d], d);
  return {c, found_radius};
}

std::array<double, 3> shrinking_sphere_centre(std::span<const double> position, std::span<const double> mass,
                                              const Box& box, const std::array<double, 3>& reference,
                                              const ShrinkingSphere& params) {
  return ShrinkingSphereGroup(position, mass, box, reference).centre(params);
}

}  // namespace phew::grid
