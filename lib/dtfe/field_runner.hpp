// Running many fields on many ranks (Rangel et al. Sec. IV C-E). Each rank owns the fields whose
// centre lies in its block and can compute them alone (ghost zones); how the work is shared:
//   none     each rank computes its own fields;
//   model    the paper's a-priori schedule: time one random field per rank (at least 16 in all), fit
//            the workload model,
//            predict every field, build the communication list and bin-pack each sender's fields
//            between its sends (load_model.hpp, schedule.hpp); senders ship fields' particles;
//   dynamic  a work queue: ranks that run out ask the most loaded ranks for their largest field
//            not yet started, until none is left (answered between the victim's fields).
// A field's map does not depend on where it is computed, so the maps are the same under all three.
#pragma once

#include <phew/dtfe/field_points.hpp>
#include <phew/dtfe/load_model.hpp>
#include <phew/dtfe/surface_density.hpp>
#include <phew/mpi/comm.hpp>

#include <functional>
#include <string>
#include <vector>

namespace phew::dtfe {

enum class Schedule { none, model, dynamic };
Schedule parse_schedule(const std::string& text);  // throws Error(usage)
const char* to_string(Schedule s);

struct FieldTask {
  std::size_t index = 0;          // the field's row in the output
  std::uint64_t n_particles = 0;  // particles in its window (the model's n)
};

struct FieldOutcome {
  std::size_t index = 0;
  FieldResult result;
  double predicted = 0;  // the model's prediction in seconds (model schedule; 0 for the timed sample)
  int rank = 0;          // where it was computed
  bool sample = false;   // a random field timed to fit the model
  std::string error;     // a per-field input error (too few or coplanar particles), else empty
};

struct RunReport {
  WorkloadModel model;    // fitted (model schedule)
  int samples = 0;        // timed fields the model was fitted on (one per rank, at least 16)
  int messages_sent = 0;  // work messages this rank sent
  std::uint64_t fields_sent = 0;
  std::uint64_t fields_received = 0;
  double seconds = 0;       // this rank's wall time in run_fields
  double busy_seconds = 0;  // of which computing fields
};

using ExtractFn = std::function<FieldPoints(std::size_t index)>;
using ComputeFn = std::function<FieldResult(std::size_t index, const FieldPoints& points)>;

// Computes all ranks' tasks (each rank passes its own), sharing the work by `schedule`. `extract`
// builds a local field's points (only called on the owner), `compute` maps them (any rank). Errors
// of type input in `compute` are caught and returned per field, so that no rank is left waiting;
// the caller agrees on them. Returns the outcomes computed on this rank. Collective.
std::vector<FieldOutcome> run_fields(const std::vector<FieldTask>& tasks, const ExtractFn& extract,
                                     const ComputeFn& compute, Schedule schedule, const mpi::Comm& comm,
                                     RunReport& report);

}  // namespace phew::dtfe
