// mergertree's stages: a stage named on the command line (PEAKS[:VOTERS][:BOUND]) read, checked and
// linked to the tree, with what its snapshot adds (stage_halos.hpp). Rank 0 alone.
#pragma once

#include "mergertree.hpp"

#include <phew/manifest/manifest.hpp>
#include <phew/mergertree/stages.hpp>
#include <phew/mergertree/tree.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace phew::tools {

struct StageFiles {
  std::string peaks, voters;
  std::string bound;  // whose /objects give the peaks' bound properties ("" for none)
};

// "PEAKS[:VOTERS][:BOUND]"; without VOTERS, the file named like PEAKS with "peaks" replaced by "voters".
// VOTERS may itself be a bound.h5, which then gives the properties too. Error(usage/io).
StageFiles parse_stage(const std::string& text);

// A stage where fewer than half the peaks have --min-votes voters (mergertree::VoterCoverage): in the
// log and in the manifest, with the voters' search radius that decided it.
struct FewVoters {
  std::string peaks;
  std::int64_t stage = 0;
  mergertree::VoterCoverage coverage;
  std::string voters_by;  // "search radius R UNITS" or unbind's "most-bound particles"
};

// What the stages were made from (their snapshots too, which --particles reads) is never an output.
void protect_stage_chains(const std::vector<std::string>& stages, tool::Context& ctx);

// Reads each stage, records its files as inputs in `man` and links it to `tree`; the stages with few
// voters are added to `few`.
void link_stages(const std::vector<std::string>& stages, const TreeOptions& opt, int threads, mergertree::Tree& tree,
                 manifest::Builder& man, std::vector<FewVoters>& few);

}  // namespace phew::tools
