#include <phew/mergertree/ctrees.hpp>

#include <phew/core/error.hpp>
#include <phew/core/units.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace phew::mergertree {
namespace {

using core::units::kKmPerS;
constexpr double kMajorMergerRatio = 0.3;  // consistent-trees' default for scale_of_last_MM

// The progenitors of every row (the rows whose descendant it is), main progenitor first, then by mass
// (descending), then by key.
std::vector<std::vector<std::size_t>> progenitors_of(const TreeState& st) {
  std::vector<std::vector<std::size_t>> progs(st.rows.size());
  for (std::size_t i = 0; i < st.rows.size(); ++i)
    if (!st.rows[i].descendant.none()) progs[st.linked_row(st.rows[i].descendant)].push_back(i);
  for (std::size_t d = 0; d < progs.size(); ++d) {
    const PeakKey main = st.rows[d].main_progenitor;
    std::sort(progs[d].begin(), progs[d].end(), [&](std::size_t a, std::size_t b) {
      const TreeRow &x = st.rows[a], &y = st.rows[b];
      if ((x.peak == main) != (y.peak == main)) return x.peak == main;
      if (x.mass != y.mass) return x.mass > y.mass;
      return x.peak < y.peak;
    });
  }
  return progs;
}

}  // namespace

bool has_bound_properties(const Tree& tree) {
  return std::any_of(tree.state.rows.begin(), tree.state.rows.end(),
                     [](const TreeRow& r) { return r.halo.bound.given; });
}

double bound_or_peak_mass(const TreeRow& r) { return r.halo.bound.given ? r.halo.bound.mass : r.mass; }

bool has_so_masses(const Tree& tree) {
  return std::any_of(tree.state.rows.begin(), tree.state.rows.end(),
                     [](const TreeRow& r) { return r.halo.mvir != 0 || r.halo.m200c != 0; });
}

std::vector<std::vector<std::size_t>> depth_first_trees(const TreeState& st) {
  const auto progs = progenitors_of(st);
  std::vector<std::size_t> roots;
  for (std::size_t i = 0; i < st.rows.size(); ++i)
    if (st.rows[i].descendant.none()) roots.push_back(i);
  std::sort(roots.begin(), roots.end(), [&](std::size_t a, std::size_t b) {
    const TreeRow &x = st.rows[a], &y = st.rows[b];
    if (x.peak.snap != y.peak.snap) return x.peak.snap > y.peak.snap;
    if (x.mass != y.mass) return x.mass > y.mass;
    return x.peak.id < y.peak.id;
  });
  std::vector<std::vector<std::size_t>> trees;
  for (std::size_t root : roots) {
    std::vector<std::size_t> order, stack{root};
    while (!stack.empty()) {  // an explicit stack: main branches can be long
      const std::size_t r = stack.back();
      stack.pop_back();
      order.push_back(r);
      for (auto it = progs[r].rbegin(); it != progs[r].rend(); ++it) stack.push_back(*it);
    }
    trees.push_back(std::move(order));
  }
  return trees;
}

CtreesUnits ctrees_units(const SimulationUnits& u) {
  CtreesUnits c;
  c.h = u.hubble_param > 0 ? u.hubble_param : 1.0;
  const double h_factor = u.h_scaled ? 1.0 : c.h;  // X/h = X * h
  c.mpc_h = u.length_cm / core::units::kMpcInCm * h_factor;
  c.msun_h = u.mass_g / core::units::kMsunInG * h_factor;
  c.km_s = u.velocity_cm_per_s / 1e5;
  return c;
}

void check_exportable(const Tree& tree) {
  if (!tree.units.known)
    throw core::Error::input(
        "the tree does not know its simulation's units (a tree.h5 from before they were stored, or "
        "stages whose snapshots could not be read): re-make it from the stages to export it");
  if (tree.units.comoving && !(tree.units.omega_m > 0))
    throw core::Error::input(
        "the tree's snapshots are comoving but have no cosmology (Omega_m 0): no cosmic time to export "
        "or measure with");
  for (std::size_t i = 1; i < tree.times.size(); ++i)
    if (!(tree.times[i] > tree.times[i - 1]))
      throw core::Error::input(
          "the tree goes back in time (made with --backwards): its descendants are earlier peaks, which "
          "the exports and statistics do not describe; make it forwards");
}

std::vector<std::vector<ExportRow>> export_rows(const Tree& tree) {
  check_exportable(tree);
  const TreeState& st = tree.state;
  const CtreesUnits cu = ctrees_units(tree.units);
  const auto progs = progenitors_of(st);
  const auto trees = depth_first_trees(st);
  const std::size_t n = st.rows.size();

  // Depth-first and breadth-first numbers, unique over the file: the rows of earlier trees come first.
  std::vector<std::int64_t> df(n, -1), bf(n, -1), last_prog(n, -1), last_mainleaf(n, -1), next_coprog(n, -1),
      root_of(n, -1);
  std::int64_t offset = 0;
  for (const auto& order : trees) {
    for (std::size_t k = 0; k < order.size(); ++k) {
      df[order[k]] = offset + static_cast<std::int64_t>(k);
      root_of[order[k]] = static_cast<std::int64_t>(order.front());
    }
    std::vector<std::size_t> level{order.front()};
    std::int64_t b = offset;
    while (!level.empty()) {
      std::vector<std::size_t> next;
      for (std::size_t r : level) {
        bf[r] = b++;
        next.insert(next.end(), progs[r].begin(), progs[r].end());
      }
      level = std::move(next);
    }
    // Leaves first (reverse depth-first order), so progenitors are done before their descendant.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const std::size_t r = *it;
      last_prog[r] = progs[r].empty() ? df[r] : last_prog[progs[r].back()];
      last_mainleaf[r] = progs[r].empty() ? df[r] : last_mainleaf[progs[r].front()];
      for (std::size_t k = 0; k + 1 < progs[r].size(); ++k) next_coprog[progs[r][k]] = df[progs[r][k + 1]];
    }
    offset += static_cast<std::int64_t>(order.size());
  }
  // Scale of the last major merger along each row's main branch: rows are in snapshot order, so a main
  // progenitor is done before its descendant.
  std::vector<double> last_mm(n, 0);
  for (std::size_t r = 0; r < n; ++r) {
    const auto& p = progs[r];
    const bool major = p.size() >= 2 && bound_or_peak_mass(st.rows[p[0]]) > 0 && [&] {
      double second = 0;
      for (std::size_t k = 1; k < p.size(); ++k) second = std::max(second, bound_or_peak_mass(st.rows[p[k]]));
      return second / bound_or_peak_mass(st.rows[p[0]]) >= kMajorMergerRatio;
    }();
    last_mm[r] = major ? st.rows[r].time : (p.empty() ? 0.0 : last_mm[p[0]]);
  }
  auto host_row = [&](std::size_t r) -> std::int64_t {
    const TreeRow& x = st.rows[r];
    if (x.halo.host <= 0 || x.halo.host == x.peak.id) return -1;
    return static_cast<std::int64_t>(st.row_index({x.peak.snap, x.halo.host}));
  };

  // With --particles every SO column is the measurement, NaN where there is none (also for a row whose
  // stage was linked without --particles: 0 in tree.h5); without, Mvir is the peak mass for all rows.
  // With bound.h5 for some stage, its rows' SO columns are bound.h5's and the others as above.
  const bool bound = has_bound_properties(tree);
  const bool so = has_so_masses(tree) || bound;
  auto measured = [](double v) { return v == 0 ? std::numeric_limits<double>::quiet_NaN() : v; };
  std::vector<std::vector<ExportRow>> out;
  for (const auto& order : trees) {
    std::vector<ExportRow> rows;
    for (std::size_t r : order) {
      const TreeRow& x = st.rows[r];
      const bool has_desc = !x.descendant.none();
      const std::size_t d = has_desc ? st.linked_row(x.descendant) : 0;
      ExportRow e;
      e.scale = x.time;
      e.id = static_cast<std::int64_t>(r);
      e.desc_scale = has_desc ? st.rows[d].time : 0.0;
      e.desc_id = has_desc ? static_cast<std::int64_t>(d) : -1;
      e.num_prog = static_cast<std::int64_t>(progs[r].size());
      e.pid = host_row(r);
      e.desc_pid = has_desc ? host_row(d) : -1;
      if (so) {
        e.mvir = measured(x.halo.mvir) * cu.msun_h;
        e.rvir = measured(x.halo.rvir) * cu.mpc_h * 1e3;
        e.m200c = measured(x.halo.m200c) * cu.msun_h;
      } else {  // the whole file says so in its #Mvir line
        e.mvir = x.mass * cu.msun_h;
      }
      if (bound) {  // NaN where unbind could not measure or the stage had no bound.h5
        const BoundProperties& b = x.halo.bound;
        auto value = [&](double v, double factor) { return b.given ? measured(v) * factor : measured(0); };
        const double kpc_h = cu.mpc_h * 1e3;
        e.rs = value(b.rs, kpc_h);
        e.vrms = value(b.vrms, cu.km_s);
        e.vmax = value(b.vmax, cu.km_s);
        e.spin = value(b.spin_peebles, 1);
        e.xoff = value(b.xoff, kpc_h);
        e.spin_bullock = value(b.spin_bullock, 1);
        e.b_to_a = value(b.b_to_a, 1);
        e.c_to_a = value(b.c_to_a, 1);
        e.virial_ratio = value(b.virial_ratio, 1);
        e.bound_mass = b.given ? b.mass * cu.msun_h : measured(0);  // 0 for a peak unbinding dissolved
        const std::size_t n_types = tree.bound_types.size();
        const bool has = b.mass_type.size() == n_types;
        for (std::size_t t = 0; t < n_types; ++t) {
          e.mass_type.push_back(has ? b.mass_type[t] * cu.msun_h : measured(0));
          e.half_mass_radius_type.push_back(has ? b.half_mass_radius_type[t] * kpc_h : measured(0));
          e.velocity_dispersion_type.push_back(has ? b.velocity_dispersion_type[t] * cu.km_s : measured(0));
        }
        for (std::size_t k = 0; k < n_types * tree.bound_apertures_kpc.size(); ++k)
          e.aperture_mass_type.push_back(has ? b.aperture_mass_type[k] * cu.msun_h : measured(0));
        // J's length is physical in the snapshot's length unit: the same factor to Mpc/h as a comoving one.
        for (std::size_t k = 0; k < 3; ++k) e.j[k] = value(b.angular_momentum[k], cu.msun_h * cu.mpc_h * cu.km_s);
      }
      e.mmp = !has_desc || st.rows[d].main_progenitor == x.peak;
      e.scale_of_last_mm = last_mm[r];
      for (std::size_t k = 0; k < 3; ++k) {
        e.x[k] = x.position[k] * cu.mpc_h;
        e.v[k] = x.velocity[k] * cu.km_s;  // peculiar already (the snapshot readers convert)
      }
      e.breadth_first = bf[r];
      e.depth_first = df[r];
      e.tree_root = root_of[r];
      e.orig_id = x.peak.id;
      e.snap = x.peak.snap;
      e.next_coprogenitor = next_coprog[r];
      e.last_progenitor = last_prog[r];
      e.last_mainleaf = last_mainleaf[r];
      e.lineage = x.lineage;
      e.merged = x.merged;
      e.revived = x.revived;
      e.gap = x.gap;
      e.artefact = x.artefact;
      e.from_deblending = x.from_deblending;
      rows.push_back(e);
    }
    out.push_back(std::move(rows));
  }
  return out;
}

namespace {

// The per-type columns' names after column 47, in the order of a row: per type its bound mass, half-mass
// radius and velocity dispersion, then per aperture every type's mass within it.
std::vector<std::string> per_type_columns(const Tree& tree) {
  std::vector<std::string> out;
  for (const std::string& type : tree.bound_types)
    for (const char* what : {"phew_bound_mass_", "phew_half_mass_radius_", "phew_velocity_dispersion_"})
      out.push_back(what + type);
  for (const double r : tree.bound_apertures_kpc)
    for (const std::string& type : tree.bound_types) out.push_back(fmt::format("phew_bound_mass_{}_{:g}kpc", type, r));
  return out;
}

}  // namespace

std::string ctrees_file(const Tree& tree, const std::string& written_by) {
  const auto trees = export_rows(tree);
  const bool comoving = tree.units.comoving;
  const CtreesUnits cu = ctrees_units(tree.units);
  std::string out =
      "#scale(0) id(1) desc_scale(2) desc_id(3) num_prog(4) pid(5) upid(6) desc_pid(7) phantom(8) sam_Mvir(9) Mvir(10) "
      "Rvir(11) rs(12) vrms(13) mmp?(14) scale_of_last_MM(15) vmax(16) x(17) y(18) z(19) vx(20) vy(21) vz(22) Jx(23) "
      "Jy(24) Jz(25) Spin(26) Breadth_first_ID(27) Depth_first_ID(28) Tree_root_ID(29) Orig_halo_ID(30) Snap_idx(31) "
      "Next_coprogenitor_depthfirst_ID(32) Last_progenitor_depthfirst_ID(33) Last_mainleaf_depthfirst_ID(34) M200c(35) "
      "phew_lineage(36) phew_merged(37) phew_revived(38) phew_gap(39) phew_artefact(40) phew_from_deblending(41)";
  const bool bound = has_bound_properties(tree);
  out += bound ? " Xoff(42) Spin_Bullock(43) b_to_a(44) c_to_a(45) T/|U|(46) phew_bound_mass(47)" : "";
  // Per type: a bound mass and a half-mass radius column each (ytree reads any named column).
  const std::vector<std::string>& types = bound ? tree.bound_types : std::vector<std::string>{};
  const std::vector<std::string> type_columns = per_type_columns(tree);
  for (std::size_t k = 0; k < (bound ? type_columns.size() : 0); ++k)
    out += fmt::format(" {}({})", type_columns[k], 48 + k);
  out += "\n";
  out += fmt::format("#Omega_M = {:f}; Omega_L = {:f}; h0 = {:f}\n", tree.units.omega_m, tree.units.omega_lambda, cu.h);
  out += fmt::format("#Full box size = {:f} Mpc/h\n", tree.sim.box[0] * cu.mpc_h);
  out += comoving ? "#Scale: Scale factor of halo.\n"
                  : "#Scale: Time of the snapshot in the simulation's time unit; this run is not cosmological.\n";
  out +=
      "#ID: ID of halo, unique across the file: its row in tree.h5 /peaks, from 0.\n"
      "#Desc_Scale: Scale of descendant halo, if applicable; 0 otherwise.\n"
      "#Descid: ID of descendant halo, if applicable; -1 otherwise.\n"
      "#Num_prog: Number of progenitors.\n"
      "#Pid: ID of the central peak of the halo it sits in; -1 if it is that central itself.\n"
      "#Upid: ID of the most massive host halo; the same as Pid, phew's hierarchy has one level of hosts.\n"
      "#Desc_pid: Pid of descendant halo, if applicable; -1 otherwise.\n"
      "#Phantom: Always 0; a link across snapshots from the graveyard is direct, see phew_gap.\n"
      "#SAM_Mvir: The same as Mvir (Msun/h).\n";
  if (bound)
    out +=
        "#Mvir: Virial mass of Bryan and Norman 1998 at the halo's redshift: of its bound particles, from unbind's "
        "bound.h5, for a stage linked with one; else measured from all particles by mergertree --particles; nan "
        "where it was not measured (Msun/h).\n"
        "#Rvir: Virial radius, from bound.h5 as Mvir; nan where it was not measured (kpc/h comoving).\n"
        "#Rs: NFW scale radius of a profile fit to the bound particles (bound.h5 rs_fit); nan where not measured "
        "(kpc/h comoving).\n"
        "#Vrms: Velocity dispersion of the bound particles (bound.h5); nan where not measured (km/s physical).\n";
  else
    out += has_so_masses(tree)
               ? "#Mvir: Virial mass of Bryan and Norman 1998 at the halo's redshift, measured from the particles by "
                 "mergertree --particles; nan where it could not be measured (Msun/h).\n"
                 "#Rvir: Virial radius; nan where it could not be measured (kpc/h comoving).\n"
               : "#Mvir: The peak's mass, the mass of its particles: mergertree ran without --particles, so no virial "
                 "mass "
                 "was measured (Msun/h).\n"
                 "#Rvir: Not measured, 0: mergertree ran without --particles (kpc/h comoving).\n";
  if (!bound) out += "#Rs: Not measured, 0 (kpc/h comoving).\n#Vrms: Not measured, 0 (km/s physical).\n";
  out += "#mmp?: 1 if the halo is the main progenitor of its descendant chosen by the voters, or has no descendant.\n";
  out += bound ? "#scale_of_last_MM: Scale of the last merger along the main branch with mass ratio above 0.3 (bound "
                 "masses where a stage has a bound.h5, else peak masses).\n"
                 "#Vmax: Maximum circular velocity of the bound particles (bound.h5); nan where not measured (km/s "
                 "physical).\n"
               : "#scale_of_last_MM: Scale of the last merger along the main branch with mass ratio above 0.3.\n"
                 "#Vmax: Not measured, 0 (km/s physical).\n";
  out +=
      "#X/Y/Z: Halo position (Mpc/h comoving).\n"
      "#VX/VY/VZ: Halo peculiar velocity (km/s physical).\n"
      "#JX/JY/JZ: Not measured, 0.\n";
  out += bound
             ? "#Spin: Peebles spin parameter of the bound particles (bound.h5 spin_peebles); nan where not measured.\n"
             : "#Spin: Not measured, 0.\n";
  out +=
      "#Breadth_first_ID: breadth-first ordering of halos within a tree, unique across the file.\n"
      "#Depth_first_ID: depth-first ordering of halos within a tree, main progenitor first, unique across the file.\n"
      "#Tree_root_ID: ID of the halo at the root of the tree, its first row.\n"
      "#Orig_halo_ID: The peak ID in its snapshot.\n"
      "#Snap_idx: Index of the snapshot in the tree, from 0.\n"
      "#Next_coprogenitor_depthfirst_ID: Depthfirst ID of next coprogenitor; -1 if none.\n"
      "#Last_progenitor_depthfirst_ID: Depthfirst ID of last progenitor.\n"
      "#Last_mainleaf_depthfirst_ID: Depthfirst ID of last progenitor on main progenitor branch.\n";
  out += has_so_masses(tree) ? "#M200c: Mass within the outermost radius of mean density 200 times critical at the "
                               "halo's redshift; nan where it could not be measured (Msun/h).\n"
                             : "#M200c: Not measured, 0: mergertree ran without --particles (Msun/h).\n";
  out +=
      "#phew_lineage: phew's lineage number.\n"
      "#phew_merged: 1 if the peak merged into its descendant, which is not its own lineage.\n"
      "#phew_revived: 1 if linked to its main progenitor through the graveyard.\n"
      "#phew_gap: Snapshots between the peak and a progenitor revived from the graveyard.\n"
      "#phew_artefact: 1 for a peak found only by deblending and matched to nothing.\n"
      "#phew_from_deblending: 1 for a peak that exists only in velocity space.\n";
  if (bound)
    out +=
        "#Jx/Jy/Jz: Angular momentum of the bound particles about the centre (bound.h5); nan where not measured "
        "((Msun/h) * (Mpc/h) * km/s (physical)).\n"
        "#Xoff: Offset of the centre from the bound particles' centre of mass inside Rvir (bound.h5); nan where not "
        "measured (kpc/h comoving).\n"
        "#Spin_Bullock: Bullock spin parameter of the bound particles (bound.h5); nan where not measured.\n"
        "#b_to_a/c_to_a: Axis ratios of the bound particles' reduced inertia tensor inside Rvir (bound.h5); nan where "
        "not measured.\n"
        "#T/|U|: Virial ratio of the bound particles (bound.h5 virial_ratio); nan where not measured.\n"
        "#phew_bound_mass: Mass of the bound particles with bound sub-objects (bound.h5 mass_inclusive; 0 if unbinding "
        "dissolved the peak); nan for a stage without bound.h5 (Msun/h).\n";
  if (!types.empty())
    out +=
        "#phew_bound_mass_TYPE: Mass of the bound particles of that type with bound sub-objects (bound.h5 "
        "mass_inclusive_type); nan for a stage without per-type columns (Msun/h).\n"
        "#phew_half_mass_radius_TYPE: Radius about the centre holding half of that type's bound mass (bound.h5 "
        "half_mass_radius_inclusive_type); nan where not measured (kpc/h comoving).\n"
        "#phew_velocity_dispersion_TYPE: 1-D velocity dispersion of that type's bound particles (bound.h5 "
        "velocity_dispersion_inclusive_type); nan where not measured (km/s physical).\n"
        "#phew_bound_mass_TYPE_Rkpc: That type's bound mass within R physical kpc of the centre (bound.h5 "
        "aperture_mass_inclusive_type) (Msun/h).\n";
  out += fmt::format("#Consistent Trees Version 1.01 layout, written by {}\n", written_by);
  out += fmt::format("{}\n", trees.size());
  for (const auto& rows : trees) {
    out += fmt::format("#tree {}\n", rows.front().id);
    for (const ExportRow& e : rows) {
      // Without bound.h5, rs, vrms, vmax and Spin are 0 (not measured) and the bound columns are absent.
      const std::string rs = bound ? fmt::format("{:.5f}", e.rs) : "0",
                        vrms = bound ? fmt::format("{:.3f}", e.vrms) : "0",
                        vmax = bound ? fmt::format("{:.3f}", e.vmax) : "0",
                        spin = bound ? fmt::format("{:.6f}", e.spin) : "0";
      std::array<std::string, 3> j{"0", "0", "0"};
      if (bound)
        for (std::size_t k = 0; k < 3; ++k) j[k] = fmt::format("{:.5e}", e.j[k]);
      std::string tail = bound ? fmt::format(" {:.5f} {:.6f} {:.6f} {:.6f} {:.6f} {:.5e}", e.xoff, e.spin_bullock,
                                             e.b_to_a, e.c_to_a, e.virial_ratio, e.bound_mass)
                               : "";
      for (std::size_t t = 0; t < types.size(); ++t)
        tail += fmt::format(" {:.5e} {:.5f} {:.3f}", e.mass_type[t], e.half_mass_radius_type[t],
                            e.velocity_dispersion_type[t]);
      for (const double m : e.aperture_mass_type) tail += fmt::format(" {:.5e}", m);
      out += fmt::format(
          " {:.5f} {} {:.5f} {} {} {} {} {} 0 {:.5e} {:.5e} {:.5f} {} {} {} {:.5f} {} {:.8f} {:.8f} {:.8f} {:.3f} "
          "{:.3f} "
          "{:.3f} {} {} {} {} {} {} {} {} {} {} {} {} {:.5e} {} {} {} {} {} {}{}\n",
          e.scale, e.id, e.desc_scale, e.desc_id, e.num_prog, e.pid, e.pid, e.desc_pid, e.mvir, e.mvir, e.rvir, rs,
          vrms, int(e.mmp), e.scale_of_last_mm, vmax, e.x[0], e.x[1], e.x[2], e.v[0], e.v[1], e.v[2], j[0], j[1], j[2],
          spin, e.breadth_first, e.depth_first, e.tree_root, e.orig_id, e.snap, e.next_coprogenitor, e.last_progenitor,
          e.last_mainleaf, e.m200c, e.lineage, int(e.merged), int(e.revived), e.gap, int(e.artefact),
          int(e.from_deblending), tail);
    }
  }
  return out;
}

model::Arbor arbor_of(const Tree& tree) {
  const auto trees = export_rows(tree);
  const CtreesUnits cu = ctrees_units(tree.units);
  model::Arbor a;
  a.hubble_constant = cu.h;
  a.omega_matter = tree.units.omega_m;
  a.omega_lambda = tree.units.omega_lambda;
  a.box_size = tree.sim.box[0] * cu.mpc_h;
  auto integer = [&](std::string name, std::string description, auto member) {
    model::ArborField f{std::move(name), "", std::move(description), {}, {}};
    for (const auto& rows : trees)
      for (const ExportRow& e : rows) f.integers.push_back(static_cast<std::int64_t>(member(e)));
    a.fields.push_back(std::move(f));
  };
  auto real = [&](std::string name, std::string units, std::string description, auto member) {
    model::ArborField f{std::move(name), std::move(units), std::move(description), {}, {}};
    for (const auto& rows : trees)
      for (const ExportRow& e : rows) f.values.push_back(member(e));
    a.fields.push_back(std::move(f));
  };
  integer("uid", "unique ID: the peak's row in tree.h5", [](const ExportRow& e) { return e.id; });
  integer("desc_uid", "uid of the descendant; -1 for a root", [](const ExportRow& e) { return e.desc_id; });
  real("scale_factor", "", "scale factor (the snapshot time for a non-cosmological run)",
       [](const ExportRow& e) { return e.scale; });
  if (has_bound_properties(tree)) {
    real("mass", "Msun/h",
         "virial mass (Bryan & Norman) of the bound particles (bound.h5), else from --particles; nan "
         "where not measured",
         [](const ExportRow& e) { return e.mvir; });
    real("virial_radius", "kpc/h", "virial radius, comoving, as mass; nan where not measured",
         [](const ExportRow& e) { return e.rvir; });
    real("M200c", "Msun/h", "mass within 200 rho_crit(z), as mass; nan where not measured",
         [](const ExportRow& e) { return e.m200c; });
  } else if (has_so_masses(tree)) {
    real("mass", "Msun/h", "virial mass (Bryan & Norman) from the particles; nan where not measurable",
         [](const ExportRow& e) { return e.mvir; });
    real("virial_radius", "kpc/h", "virial radius, comoving; nan where not measurable",
         [](const ExportRow& e) { return e.rvir; });
    real("M200c", "Msun/h", "mass within 200 rho_crit(z); nan where not measurable",
         [](const ExportRow& e) { return e.m200c; });
  } else {
    real("mass", "Msun/h", "the peak's mass (its particles): made without --particles, no virial mass",
         [](const ExportRow& e) { return e.mvir; });
    real("virial_radius", "kpc/h", "not measured (no --particles), 0", [](const ExportRow& e) { return e.rvir; });
    real("M200c", "Msun/h", "not measured (no --particles), 0", [](const ExportRow& e) { return e.m200c; });
  }
  const char* axes[3] = {"x", "y", "z"};
  for (std::size_t k = 0; k < 3; ++k) {
    real(std::string("position_") + axes[k], "Mpc/h", "comoving position", [k](const ExportRow& e) { return e.x[k]; });
    real(std::string("velocity_") + axes[k], kKmPerS, "peculiar velocity", [k](const ExportRow& e) { return e.v[k]; });
  }
  integer("upid", "uid of the central peak of the halo it sits in; -1 for a central",
          [](const ExportRow& e) { return e.pid; });
  integer("mmp", "1 for its descendant's main progenitor (or no descendant)", [](const ExportRow& e) { return e.mmp; });
  integer("halo_id", "the peak ID in its snapshot", [](const ExportRow& e) { return e.orig_id; });
  integer("snap_idx", "stage index", [](const ExportRow& e) { return e.snap; });
  integer("phew_lineage", "phew's lineage", [](const ExportRow& e) { return e.lineage; });
  integer("phew_merged", "merged into its descendant", [](const ExportRow& e) { return e.merged; });
  integer("phew_revived", "revived from the graveyard", [](const ExportRow& e) { return e.revived; });
  integer("phew_gap", "snapshots skipped by a revival", [](const ExportRow& e) { return e.gap; });
  integer("phew_artefact", "a deblending artefact", [](const ExportRow& e) { return e.artefact; });
  if (has_bound_properties(tree)) {  // bound.h5's, nan where not measured or the stage had none
    real("rs", "kpc/h", "NFW scale radius of a profile fit, comoving", [](const ExportRow& e) { return e.rs; });
    real("vrms", kKmPerS, "velocity dispersion of the bound particles", [](const ExportRow& e) { return e.vrms; });
    real("vmax", kKmPerS, "maximum circular velocity", [](const ExportRow& e) { return e.vmax; });
    real("spin_parameter", "", "Peebles spin parameter", [](const ExportRow& e) { return e.spin; });
    real("spin_bullock", "", "Bullock spin parameter", [](const ExportRow& e) { return e.spin_bullock; });
    real("xoff", "kpc/h", "offset of the centre from the centre of mass, comoving",
         [](const ExportRow& e) { return e.xoff; });
    real("b_to_a", "", "axis ratio b/a", [](const ExportRow& e) { return e.b_to_a; });
    real("c_to_a", "", "axis ratio c/a", [](const ExportRow& e) { return e.c_to_a; });
    real("virial_ratio", "", "T/|U|", [](const ExportRow& e) { return e.virial_ratio; });
    for (std::size_t k = 0; k < 3; ++k)
      real(std::string("J") + "xyz"[k], std::string("Msun/h*Mpc/h*") + kKmPerS,
           "angular momentum of the bound particles, physical", [k](const ExportRow& e) { return e.j[k]; });
    real("phew_bound_mass", "Msun/h", "mass of the bound particles (with bound sub-objects)",
         [](const ExportRow& e) { return e.bound_mass; });
    const std::size_t n_types = tree.bound_types.size();
    for (std::size_t t = 0; t < n_types; ++t) {
      const std::string& type = tree.bound_types[t];
      real("phew_bound_mass_" + type, "Msun/h", "mass of the bound particles of type " + type + " (with sub-objects)",
           [t](const ExportRow& e) { return e.mass_type[t]; });
      real("phew_half_mass_radius_" + type, "kpc/h", "half-mass radius of the bound particles of type " + type,
           [t](const ExportRow& e) { return e.half_mass_radius_type[t]; });
      real("phew_velocity_dispersion_" + type, kKmPerS,
           "1-D velocity dispersion of the bound particles of type " + type,
           [t](const ExportRow& e) { return e.velocity_dispersion_type[t]; });
    }
    for (std::size_t k = 0; k < tree.bound_apertures_kpc.size(); ++k)
      for (std::size_t t = 0; t < n_types; ++t)
        real(fmt::format("phew_bound_mass_{}_{:g}kpc", tree.bound_types[t], tree.bound_apertures_kpc[k]), "Msun/h",
             fmt::format("bound mass of type {} within {:g} physical kpc", tree.bound_types[t],
                         tree.bound_apertures_kpc[k]),
             [i = k * n_types + t](const ExportRow& e) { return e.aperture_mass_type[i]; });
  }
  std::uint64_t row = 0;
  for (const auto& rows : trees) {
    a.tree_start.push_back(row);
    row += rows.size();
  }
  return a;
}

}  // namespace phew::mergertree
