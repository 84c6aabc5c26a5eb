#include <phew/mergertree/tree_stats.hpp>

#include <phew/mergertree/ctrees.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

namespace phew::mergertree {
namespace {

using nlohmann::json;

constexpr double kMpcCm = 3.085678e24;
constexpr double kGravityCgs = 6.6743e-8;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// A distribution: count, mean, median, standard deviation and a histogram of fixed edges.
json summary(const std::vector<double>& v, const std::vector<double>& edges) {
  double var = 0;
  const double m = mean(v);
  for (double x : v) var += (x - m) * (x - m);
  std::vector<std::int64_t> counts(edges.size() - 1, 0);
  for (double x : v) {
    const auto it = std::upper_bound(edges.begin(), edges.end(), x);
    const auto k =
        std::clamp<std::ptrdiff_t>(it - edges.begin() - 1, 0, static_cast<std::ptrdiff_t>(counts.size()) - 1);
    ++counts[static_cast<std::size_t>(k)];
  }
  return {{"n", v.size()},
          {"mean", m},
          {"median", median(v)},
          {"std", v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0.0},
          {"histogram", {{"edges", edges}, {"counts", counts}}}};
}

std::vector<double> linear_edges(double lo, double hi, int n) {
  std::vector<double> e;
  for (int i = 0; i <= n; ++i) e.push_back(lo + (hi - lo) * i / n);
  return e;
}

// Counts of integer values, as {"value": count}.
json integer_histogram(const std::vector<std::int64_t>& v) {
  std::map<std::int64_t, std::int64_t> h;
  for (std::int64_t x : v) ++h[x];
  json out = json::object();
  for (const auto& [k, n] : h) out[std::to_string(k)] = n;
  return out;
}

// What the measures need from the simulation: times, comoving velocities, radii.
struct Kinematics {
  const Tree& tree;
  bool cosmological, has_cosmology;
  double h0_internal = 0;  // H0 in 1 / (snapshot length unit / velocity unit)

  explicit Kinematics(const Tree& t)
      : tree(t), cosmological(t.units.known && t.units.comoving), has_cosmology(t.units.known && t.units.omega_m > 0) {
    if (t.units.known) {
      const double h_eff = t.units.h_scaled ? 1.0 : t.units.hubble_param;
      h0_internal = 100.0 * h_eff * (t.units.length_cm / kMpcCm) / (t.units.velocity_cm_per_s / 1e5);
    }
  }
  // Time in the snapshot's time unit (length / velocity), cosmic time for a cosmological run.
  double time(double t) const {
    return cosmological ? cosmic_time(t, tree.units.omega_m, tree.units.omega_lambda) / h0_internal : t;
  }
  // Comoving velocity dx/dt from the peculiar one, v_pec = a dx/dt.
  std::array<double, 3> velocity(const TreeRow& r) const {
    const double f = cosmological ? 1.0 / r.time : 1.0;
    return {r.velocity[0] * f, r.velocity[1] * f, r.velocity[2] * f};
  }
  // Comoving radius: the measured virial radius; else that of 200 ρ_crit for the peak's mass; else,
  // without a cosmology, that of the peak's mass at the segmentation's density threshold (the size of
  // its patch if it were uniform); 0 when none is known.
  double radius(const TreeRow& r) const {
    if (r.halo.rvir > 0) return r.halo.rvir;
    if (!has_cosmology) {
      const auto s = static_cast<std::size_t>(r.peak.snap);
      const double threshold = s < tree.thresholds.size() ? tree.thresholds[s] : 0.0;
      return threshold > 0 ? std::cbrt(3.0 * bound_or_peak_mass(r) / (4.0 * std::numbers::pi * threshold)) : 0.0;
    }
    const SimulationUnits& u = tree.units;
    const double a = cosmological ? r.time : 1.0;
    const double h_eff = u.h_scaled ? 1.0 : u.hubble_param;
    const double h0 = 100.0 * h_eff * 1e5 / kMpcCm;  // 1/s
    const double e2 = u.omega_m / (a * a * a) + (1 - u.omega_m - u.omega_lambda) / (a * a) + u.omega_lambda;
    const double rho_crit =
        3.0 * h0 * h0 * e2 / (8.0 * std::numbers::pi * kGravityCgs) * std::pow(u.length_cm, 3) / u.mass_g * a * a * a;
    return std::cbrt(3.0 * bound_or_peak_mass(r) / (4.0 * std::numbers::pi * 200.0 * rho_crit));
  }
};

}  // namespace

double cosmic_time(double a, double omega_m, double omega_lambda) {
  if (omega_lambda <= 0) return 2.0 / 3.0 * std::pow(a, 1.5) / std::sqrt(omega_m);
  if (omega_m <= 0) return std::log(a) / std::sqrt(omega_lambda);
  return 2.0 / (3.0 * std::sqrt(omega_lambda)) * std::asinh(std::sqrt(omega_lambda / omega_m) * std::pow(a, 1.5));
}

double mass_growth_beta(double t1, double m1, double t2, double m2) {
  const double alpha = (t2 + t1) * (m2 - m1) / ((t2 - t1) * (m2 + m1));
  return 2.0 / std::numbers::pi * std::atan(alpha);
}

json tree_statistics(const Tree& tree, const TreeStatsParams& params) {
  check_exportable(tree);
  const TreeState& st = tree.state;
  const Kinematics kin(tree);
  auto main_progenitor = [&](std::size_t r) -> std::ptrdiff_t {
    const PeakKey k = st.rows[r].main_progenitor;
    return k.none() ? -1 : st.row_index(k);
  };
  const std::int64_t last = st.rows.empty() ? -1 : st.rows.back().peak.snap;
  std::vector<std::int64_t> progenitors(st.rows.size(), 0);
  for (const TreeRow& r : st.rows)
    if (!r.descendant.none()) ++progenitors[st.linked_row(r.descendant)];

  // The trees, with each row's tree; the final peaks are the roots at the last snapshot.
  const auto trees = depth_first_trees(st);
  // The bound mass where the stage came with a bound.h5; else Mvir where --particles measured it.
  auto mass_of = [](const TreeRow& r) {
    return r.halo.bound.given ? r.halo.bound.mass : r.halo.mvir > 0 ? r.halo.mvir : r.mass;
  };

  auto report = [&](bool subhaloes) {
    std::vector<double> length, branches, beta, xi, delta_r;
    std::vector<std::int64_t> n_prog;
    std::int64_t n_trees = 0;
    for (const auto& order : trees) {
      const TreeRow& root = st.rows[order.front()];
      // An artefact (a velocity-space peak no progenitor claims) is not an object: neither a halo nor a
      // subhalo, though it sits in another peak's halo. It has no progenitors and never votes, so it
      // is only ever the root of its own one-peak tree.
      if (root.peak.snap != last || root.artefact || mass_of(root) < params.min_mass) continue;
      if ((root.halo.host > 0 && root.halo.host != root.peak.id) != subhaloes) continue;
      ++n_trees;
      std::int64_t leaves = 0;
      for (std::size_t r : order) {
        n_prog.push_back(progenitors[r]);
        leaves += progenitors[r] == 0;
      }
      branches.push_back(static_cast<double>(leaves));
      // The main branch, latest first.
      std::vector<std::size_t> branch{order.front()};
      for (std::ptrdiff_t p = main_progenitor(order.front()); p >= 0; p = main_progenitor(static_cast<std::size_t>(p)))
        branch.push_back(static_cast<std::size_t>(p));
      length.push_back(static_cast<double>(root.peak.snap - st.rows[branch.back()].peak.snap + 1));
      std::vector<double> b;  // β between entries k (earlier) and k+1 (later), from the earliest on
      for (std::size_t k = branch.size() - 1; k > 0; --k) {
        const TreeRow &early = st.rows[branch[k]], &late = st.rows[branch[k - 1]];
        const double t1 = kin.time(early.time), t2 = kin.time(late.time);
        if (bound_or_peak_mass(early) + bound_or_peak_mass(late) > 0 && t2 != t1)
          b.push_back(mass_growth_beta(t1, mass_of(early), t2, mass_of(late)));
        // Δ_r: displacement against the mean velocity times the interval, in units of the mean radius
        // plus the distance that velocity covers.
        const auto v1 = kin.velocity(early), v2 = kin.velocity(late);
        const double dt = t2 - t1;
        double miss2 = 0, vsum2 = 0;
        for (std::size_t d = 0; d < 3; ++d) {
          double dx = late.position[d] - early.position[d];
          if (tree.sim.periodic && tree.sim.box[d] > 0) dx -= tree.sim.box[d] * std::round(dx / tree.sim.box[d]);
          const double predicted = 0.5 * (v1[d] + v2[d]) * dt;
          miss2 += (dx - predicted) * (dx - predicted);
          vsum2 += (v1[d] + v2[d]) * (v1[d] + v2[d]);
        }
        const double scale = 0.5 * (kin.radius(early) + kin.radius(late) + std::sqrt(vsum2) * std::abs(dt));
        if (scale > 0) delta_r.push_back(std::sqrt(miss2) / scale);
      }
      beta.insert(beta.end(), b.begin(), b.end());
      for (std::size_t k = 1; k < b.size(); ++k) xi.push_back(0.5 * (b[k] - b[k - 1]));
    }
    std::vector<double> log_dr;
    std::int64_t above = 0;
    for (double d : delta_r) {
      log_dr.push_back(std::log10(std::max(d, 1e-6)));
      above += d > 1;
    }
    std::vector<double> lengths_edges;
    for (int i = 0; i <= std::max<std::int64_t>(last + 1, 1); ++i) lengths_edges.push_back(i + 0.5);
    json j = {{"n_trees", n_trees},
              {"main_branch_length", summary(length, lengths_edges)},
              {"branches_per_tree", summary(branches, linear_edges(0.5, 20.5, 20))},
              {"n_progenitors", integer_histogram(n_prog)},
              {"beta_m", summary(beta, linear_edges(-1, 1, 20))},
              {"xi_m", summary(xi, linear_edges(-1, 1, 20))},
              {"delta_r", summary(delta_r, {0, 0.01, 0.03, 0.1, 0.3, 1, 3, 10, 1e300})},
              {"delta_r_fraction_above_1",
               delta_r.empty() ? 0.0 : static_cast<double>(above) / static_cast<double>(delta_r.size())}};
    double negative = 0;
    for (double x : beta) negative += x < 0;
    j["beta_m"]["fraction_negative"] = beta.empty() ? 0.0 : negative / static_cast<double>(beta.size());
    return j;
  };

  std::int64_t revived = 0, skipping = 0, artefacts = 0, final_artefacts = 0, mergers = 0;
  for (const TreeRow& r : st.rows) {
    revived += r.revived;
    artefacts += r.artefact;
    final_artefacts += r.artefact && r.peak.snap == last;
    mergers += r.merged;
    if (!r.main_progenitor.none() && r.peak.snap - r.main_progenitor.snap > 1) ++skipping;
  }
  // A tree with bound.h5 for some stage says how its masses were chosen (the others' reports are unchanged).
  const std::string bound_note = has_bound_properties(tree)
                                     ? "; for a peak whose stage came with unbind's bound.h5: M its bound mass, R its "
                                       "Rvir from bound.h5 when measured, else computed as above from its bound mass"
                                     : "";
  return {{"conventions",
           {{"final_peaks",
             "the peaks of the last snapshot; haloes: centrals (no host), subhaloes: inside another "
             "peak's halo; artefacts and peaks below min_mass (Mvir when measured, else the peak mass" +
                 bound_note + ") left out"},
            {"main_branch_length",
             "snapshots from the final peak back to its earliest main progenitor, both counted "
             "(a link across a graveyard gap counts the snapshots it skips)"},
            {"branches_per_tree", "peaks of the tree without a progenitor (its leaves)"},
            {"n_progenitors", "direct progenitors of every peak of the selected trees"},
            {"beta_m",
             "(2/pi) atan alpha, alpha = (t2+t1)(M2-M1)/((t2-t1)(M2+M1)) between adjacent main-branch "
             "entries; t the cosmic time (cosmological runs) or the snapshot time; M = Mvir when measured, "
             "else the peak mass" +
                 bound_note},
            {"xi_m", "(beta(k,k+1) - beta(k-1,k)) / 2 along main branches"},
            {"delta_r",
             "|dx - (v1+v2) dt/2| / ((R1 + R2 + |v1+v2| dt)/2), comoving, periodic dx; R = Rvir when "
             "measured, else the radius of 200 rho_crit for the peak mass, else (no cosmology) the radius "
             "of the peak mass at the density threshold of the segmentation" +
                 bound_note}}},
          {"n_snapshots", last + 1},
          {"min_mass", params.min_mass},
          {"haloes", report(false)},
          {"subhaloes", report(true)},
          {"counts",
           {{"peaks", st.rows.size()},
            {"lineages", st.next_lineage - 1},
            {"mergers", mergers},
            {"revived", revived},
            {"links_skipping_snapshots", skipping},
            {"artefacts", artefacts},
            {"final_artefacts_left_out", final_artefacts}}}};
}

}  // namespace phew::mergertree
