#include "stage_files.hpp"

#include "stage_halos.hpp"

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/core/progress.hpp>
#include <phew/io/bound_file.hpp>
#include <phew/io/peaks_file.hpp>
#include <phew/io/products.hpp>
#include <phew/io/voters_file.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace phew::tools {
namespace {

namespace fs = std::filesystem;

}  // namespace

// "PEAKS[:VOTERS][:BOUND]"; without VOTERS, the file named like PEAKS with "peaks" replaced by
// "voters". VOTERS may itself be a bound.h5, which then gives the properties too.
StageFiles parse_stage(const std::string& text) {
  StageFiles f;
  const auto colon = text.find(':');
  f.peaks = text.substr(0, colon);
  if (colon != std::string::npos) {
    f.voters = text.substr(colon + 1);
    if (const auto second = f.voters.find(':'); second != std::string::npos) {
      f.bound = f.voters.substr(second + 1);
      f.voters.resize(second);
      if (f.bound.empty() || f.bound.find(':') != std::string::npos)
        throw core::Error::usage("stage '{}': give PEAKS[:VOTERS][:BOUND], each a file name", text);
    }
  } else {
    const fs::path p(f.peaks);
    std::string name = p.filename().string();
    const auto at = name.rfind("peaks");
    if (at == std::string::npos)
      throw core::Error::usage("stage '{}': give PEAKS:VOTERS (the voters file cannot be guessed from the name)", text);
    name.replace(at, 5, "voters");
    f.voters = (p.parent_path() / name).string();
  }
  if (!fs::exists(f.voters)) throw core::Error::io("{}: missing voters file {} for this stage", f.peaks, f.voters);
  if (!f.bound.empty() && !fs::exists(f.bound))
    throw core::Error::io("{}: missing bound file {} for this stage", f.peaks, f.bound);
  return f;
}

namespace {

// A stage's files, checked (kinds, and the voters computed from these peaks) and recorded as inputs.
mergertree::Stage read_stage(const StageFiles& files, std::int64_t snap, std::int64_t min_votes, const TreeOptions& opt,
                             int threads, mergertree::Simulation& sim, mergertree::SimulationUnits& units,
                             manifest::Builder& man, std::vector<FewVoters>& few) {
  const auto peaks_in = manifest::check_phew_input(files.peaks, {"peaks"});
  // The voters: voters' (boosted potential), or unbind's most-bound particles of these peaks (bound.h5).
  const auto voters_in = manifest::check_phew_input(files.voters, {"voters", "bound"});
  const bool bound = voters_in.kind == "bound";
  if (!manifest::made_from(files.voters, peaks_in.fingerprint))
    throw core::Error::input("{}: was not computed from {} (stale or swapped voters file)", files.voters, files.peaks);
  io::check_product(files.peaks, peaks_in.kind);  // every declared value of the stage's products
  io::check_product(files.voters, voters_in.kind);
  man.add_input(peaks_in);
  man.add_input(voters_in);
  // The peaks' bound properties: from BOUND, else from VOTERS when that is a bound.h5.
  const std::string properties = !files.bound.empty() ? files.bound : bound ? files.voters : std::string();
  if (!files.bound.empty()) {
    const auto bound_in = manifest::check_phew_input(files.bound, {"bound"});
    if (!manifest::made_from(files.bound, peaks_in.fingerprint))
      throw core::Error::input("{}: was not computed from {} (stale or swapped bound file)", files.bound, files.peaks);
    if (files.bound != files.voters) io::check_product(files.bound, bound_in.kind);
    if (files.bound != files.voters) man.add_input(bound_in);
  }
  const io::File pf = io::File::open_read(files.peaks);
  const io::PeaksHeader header = io::read_peaks_header(pf);
  io::check_peculiar_velocities(header, files.peaks);
  sim = mergertree::simulation_of(header.grid);
  const io::File vf = io::File::open_read(files.voters);
  const std::int64_t per_peak =
      bound ? io::read_bound_header(vf).meta.n_most_bound : io::read_voters_header(vf).meta.n_voters_requested;
  if (min_votes > per_peak)
    throw core::Error::usage("--min-votes {} is more than the {} voters per peak of {}: no peak could ever be linked",
                             min_votes, per_peak, files.voters);
  const std::vector<model::PeakRow> rows = io::read_peak_rows(pf);
  std::vector<model::VoterRow> voters;
  std::string voters_by = "unbind's most-bound particles";
  if (bound) {
    voters = io::read_bound_voters(vf, rows, files.peaks);
  } else {
    io::check_voter_peaks_resolve(vf, rows, files.peaks);
    voters = io::read_voter_rows(vf);
    double radius = 0;
    for (const model::VoterPeakRow& p : io::read_voter_peaks(vf)) radius = std::max(radius, p.search_radius);
    voters_by = fmt::format("voters' search radius {:.4g} {}", radius, header.grid.length_units);
  }
  mergertree::Stage stage = mergertree::make_stage(snap, header.meta.time, rows, io::read_peak_members(pf), voters);
  stage.voters_per_peak = per_peak;
  if (const mergertree::VoterCoverage c = mergertree::voter_coverage(stage, min_votes); c.few()) {
    core::log::warn(
        "{}: only {} of {} peaks have {} voters or more (median {}; {}): their links rest on fewer votes, "
        "and peaks without voters only start lineages; give voters a larger --search-radius (its default "
        "fits the box) or mergertree a lower --min-votes",
        files.peaks, c.with_min_votes, c.peaks, min_votes, c.median_voters, voters_by);
    few.push_back({files.peaks, snap, c, voters_by});
  }
  const mergertree::SimulationUnits u =
      add_stage_halos(stage, files.peaks, header, rows, opt.particles, opt.units, threads, man);
  if (!properties.empty()) add_bound_properties(stage, properties, u);
  if (u.known) units = u;
  return stage;
}

}  // namespace

void link_stages(const std::vector<std::string>& stages, const TreeOptions& opt, int threads, mergertree::Tree& tree,
                 manifest::Builder& man, std::vector<FewVoters>& few) {
  core::Progress progress("link", "snapshots", stages.size());
  for (const std::string& text : stages) {
    const StageFiles files = parse_stage(text);
    mergertree::Simulation sim;
    mergertree::Stage stage = read_stage(files, static_cast<std::int64_t>(tree.times.size()), tree.params.min_votes,
                                         opt, threads, sim, tree.units, man, few);
    append_stage(tree, std::move(stage), sim, opt.backwards, files.peaks);
    core::log::verbose("linked {}: {} peaks", files.peaks, tree.state.last.peaks.size());
    progress.add();
  }
  progress.finish();
}

void protect_stage_chains(const std::vector<std::string>& stages, tool::Context& ctx) {
  for (const std::string& text : stages) {
    const StageFiles files = parse_stage(text);
    for (const std::string& f : {files.peaks, files.voters, files.bound})
      if (!f.empty()) ctx.protect_chain(f);
  }
}

}  // namespace phew::tools
