#include <phew/unbind/hierarchy.hpp>

#include <phew/core/error.hpp>
#include <phew/core/raw_vector.hpp>

#include <algorithm>
#include <limits>
#include <numeric>

namespace phew::unbind {

HierarchyResult unbind_hierarchy(const HierarchyParticles& p, std::span<const ObjectSpec> objects, const Frame& frame,
                                 const Params& params) {
  const std::size_t n = p.mass.size(), n_obj = objects.size();
  if (p.id.size() != n || p.position.size() != 3 * n || p.velocity.size() != 3 * n || p.object.size() != n ||
      (!p.type.empty() && p.type.size() != n))
    throw core::Error::internal("unbind: particle arrays of different lengths ({} masses)", n);
  const auto n_obj_i = static_cast<std::int64_t>(n_obj);

  // Depths, checking the links.
  std::vector<std::int64_t> depth(n_obj, 0);
  std::vector<std::vector<std::size_t>> children(n_obj);
  for (std::size_t o = 0; o < n_obj; ++o) {
    const std::int64_t parent = objects[o].parent;
    if (parent < -1 || parent >= n_obj_i || parent == static_cast<std::int64_t>(o))
      throw core::Error::input("unbind: object {} has parent {} (objects 0..{}, -1 for none)", o, parent, n_obj_i - 1);
    if (parent >= 0) children[static_cast<std::size_t>(parent)].push_back(o);
    for (std::int64_t q = parent; q >= 0; q = objects[static_cast<std::size_t>(q)].parent)
      if (++depth[o] > n_obj_i) throw core::Error::input("unbind: the parent links of object {} form a cycle", o);
  }
  std::vector<std::size_t> order(n_obj);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return depth[a] > depth[b]; });

  HierarchyResult result;
  result.n_particles = static_cast<std::int64_t>(n);
  result.bound_to.assign(n, -1);
  result.energy.assign(n, std::numeric_limits<double>::quiet_NaN());
  result.objects.resize(n_obj);
  std::vector<std::vector<std::size_t>> own(n_obj), inclusive(n_obj);
  std::vector<std::int64_t> received(n_obj, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t o = p.object[i];
    if (o < -1 || o >= n_obj_i)
      throw core::Error::input("unbind: particle {} is assigned to object {}, which does not exist", p.id[i], o);
    if (o >= 0) {
      own[static_cast<std::size_t>(o)].push_back(i);
      ++result.n_assigned;
    }
  }

  // Each object is unbound on the halo's own arrays through its list of particles (ObjectParticles::
  // subset): no copy of its particles. `fixed` marks, over the halo's particles, those bound to a
  // sub-object of the object being unbound (set before each object for its own list).
  std::vector<std::uint8_t> fixed(n, 0);
  for (const std::size_t o : order) {
    // Own particles first, then the sub-objects' bound ones (fixed).
    std::vector<std::size_t> all = std::move(own[o]);
    core::release(own[o]);
    const std::size_t n_own = all.size();
    for (const std::size_t c : children[o]) {
      all.insert(all.end(), inclusive[c].begin(), inclusive[c].end());
      core::release(inclusive[c]);
    }
    for (std::size_t k = 0; k < all.size(); ++k) fixed[all[k]] = k >= n_own ? 1 : 0;
    // The caller may let the arrays go once the last object's particles are copied.
    const bool last = o == order.back();
    ObjectResult r = unbind_object(
        {p.id, p.position, p.velocity, p.mass, fixed, p.type, all, last ? p.copied : std::function<void()>{}},
        objects[o], frame, params);
    r.summary.n_received = received[o];
    if (r.summary.dissolved) ++result.n_dissolved;

    std::vector<std::size_t> kept;
    const std::int64_t parent = objects[o].parent;
    for (std::size_t k = 0; k < n_own; ++k) {
      const std::size_t i = all[k];
      result.energy[i] = r.energy[k];
      if (r.bound[k]) {
        result.bound_to[i] = static_cast<std::int64_t>(o);
        kept.push_back(i);
      } else if (parent >= 0) {
        own[static_cast<std::size_t>(parent)].push_back(i);
        ++received[static_cast<std::size_t>(parent)];
        ++result.n_passed;
      }
    }
    kept.insert(kept.end(), all.begin() + static_cast<std::ptrdiff_t>(n_own), all.end());
    inclusive[o] = std::move(kept);
    result.objects[o] = std::move(r.summary);
  }
  for (const std::int64_t b : result.bound_to) result.n_bound += b >= 0 ? 1 : 0;
  result.n_unbound = result.n_assigned - result.n_bound;
  return result;
}

}  // namespace phew::unbind
