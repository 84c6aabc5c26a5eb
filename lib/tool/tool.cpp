#include <phew/tool/tool.hpp>

#include <phew/core/error.hpp>
#include <phew/core/files.hpp>
#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>
#include <phew/core/version.hpp>
#include <phew/io/products.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/manifest/fingerprint.hpp>
#include <phew/tool/json_config.hpp>
#include <phew/tool/test_hooks.hpp>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
// The tools built with PHEW_SANITIZE: Open MPI keeps its plugins' allocations to the end (LeakSanitizer
// reports them from unloaded modules, with no phew frame), so leak checking is off by default, as in
// scripts/sanitize.sh; ASAN_OPTIONS still overrides it. Every other error still stops the tool.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
#endif

namespace phew::tool {
namespace {

constexpr const char* kExitCodes = "Exit codes: 0 success, 1 internal error, 2 usage error, 3 bad input, 4 I/O error.";

namespace fs = std::filesystem;

// The path with symbolic links and "." / ".." resolved, as far as it exists (the rest appended).
std::string resolved(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : p.string();
}

// True when a and b name the same file: the same resolved path, or (both existing) the same device and
// inode, through hard links too.
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return resolved(a) == resolved(b) || (fs::equivalent(a, b, ec) && !ec);
}

fs::path folder_of(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

// Error(input) unless an input that exists is a regular file or a folder: a FIFO or a device would hang
// or feed the reader garbage (docs/cli.md, "Before any work").
void check_input_type(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st) || fs::is_regular_file(st) || fs::is_directory(st)) return;
  throw core::Error::input(
      "{}: is neither a regular file nor a folder (a FIFO, a socket or a device?): phew reads files", path);
}

// Error(io) unless `path` can be written: its folder (or, when the run makes the folder, its nearest
// existing ancestor) is a writable folder, and no folder, FIFO or device already has its name.
void check_destination(const std::string& path, bool make_folder) {
  if (path.empty()) throw core::Error::usage("an empty file name to write (-o '' ?)");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) throw core::Error::io("{}: is an existing folder, where the run would write a file", path);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw core::Error::io("{}: exists and is not a regular file (a FIFO or a device?): phew writes files", path);
  fs::path dir = folder_of(path);
  if (make_folder)
    while (!fs::exists(dir, ec)) {
      // A relative folder to be made has the working directory as its last ancestor ("ctrees" -> ".").
      if (!dir.has_parent_path() || dir.parent_path() == dir) {
        if (dir.is_relative()) dir = ".";
        break;
      }
      dir = dir.parent_path();
    }
  if (!fs::is_directory(dir, ec)) throw core::Error::io("{}: output folder {} does not exist", path, dir.string());
  if (access(dir.c_str(), W_OK) != 0) throw core::Error::io("{}: output folder {} is not writable", path, dir.string());
}

// Options that steer the run but are not parameters of the result.
bool is_common_option(const std::string& name) {
  return name == "help" || name == "version" || name == "config" || name == "verbose" || name == "quiet" ||
         name == "output";
}

manifest::Json option_value(const CLI::Option* opt) {
  if (opt->count() == 0) return opt->get_default_str();
  const auto& r = opt->results();
  if (opt->get_expected_max() > 1 || r.size() > 1) return r;
  return r.empty() ? manifest::Json(true) : manifest::Json(r.front());  // a flag has no value
}

void print_error(const std::string& tool, const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\n", tool.c_str(), message.c_str());
}

}  // namespace

Context::Context(const ToolSpec& spec, const mpi::Comm& comm, std::string output, manifest::Builder builder)
    : spec_(spec), comm_(comm), output_(std::move(output)), manifest_(std::move(builder)) {
  plan_output(output_);
}

void Context::log_memory_per(std::uint64_t local, const std::string& item) const {
  const double per = local > 0 ? static_cast<double>(core::peak_rss_bytes()) / static_cast<double>(local) : 0.0;
  const double most = comm_.max(per);
  const std::uint64_t total = comm_.sum(local);
  core::log::verbose("memory: {:.0f} B per {} at the peak so far ({} in all; the most of any rank over its share)",
                     most, item, core::log::thousands(static_cast<long long>(total)));
}

void Context::phase(std::string name) {
  if (!preflight_done_) preflight();
  phase_ = name;  // before the hooks: a failure injected here is one of this phase, after the start
  test_hook_at_phase(name, comm_);
  end_phase_traffic();
  traffic_phase_ = name;
  traffic_began_ = mpi::traffic();
  timer_.start(std::move(name));
}

void Context::end_phase_traffic() {
  if (traffic_phase_.empty()) return;
  const mpi::Traffic spent = mpi::traffic() - traffic_began_;
  const std::string phase = std::exchange(traffic_phase_, {});
  for (auto& [name, t] : traffic_)
    if (name == phase) {  // a phase entered again (one per snapshot of a sequence): summed
      t += spent;
      return;
    }
  traffic_.emplace_back(phase, spent);
}

void Context::record_exchanges() {
  // Every rank names the same phases in the same order (they are entered together); should one not,
  // only rank 0's own figures are recorded (max and total null) rather than a mismatched reduction.
  std::string names;
  for (const auto& [name, t] : traffic_) names += name + '\n';
  struct Shape {
    std::uint64_t phases, names_hash;
  };
  const Shape mine{traffic_.size(), std::hash<std::string>{}(names)};
  const std::vector<Shape> shapes = comm_.all_gather(mine);
  const bool same = std::all_of(shapes.begin(), shapes.end(), [&](const Shape& s) {
    return s.phases == shapes[0].phases && s.names_hash == shapes[0].names_hash;
  });
  std::vector<mpi::Traffic> local;
  for (const auto& [name, t] : traffic_) local.push_back(t);
  const std::vector<mpi::Traffic> all = same ? comm_.all_gatherv<mpi::Traffic>(local) : local;
  const std::size_t k = traffic_.size();
  for (std::size_t i = 0; i < k; ++i) {
    const mpi::Traffic& own = traffic_[i].second;
    manifest::Json figures = {{"bytes_sent_rank0", own.bytes_sent},
                              {"bytes_sent_max", nullptr},
                              {"bytes_sent_total", nullptr},
                              {"messages_total", nullptr},
                              {"collectives", own.collectives}};
    if (same) {
      std::uint64_t max = 0, total = 0, messages = 0;
      for (std::size_t r = 0; r < shapes.size(); ++r) {
        const mpi::Traffic& t = all[r * k + i];
        max = std::max(max, t.bytes_sent);
        total += t.bytes_sent;
        messages += t.messages;
      }
      figures["bytes_sent_rank0"] = all[i].bytes_sent;
      figures["bytes_sent_max"] = max;
      figures["bytes_sent_total"] = total;
      figures["messages_total"] = messages;
      figures["collectives"] = all[i].collectives;
    }
    manifest_.exchanges(traffic_[i].first, std::move(figures));
  }
}

void Context::set_command_line_inputs(std::vector<std::string> inputs, std::vector<std::string> replaceable) {
  inputs_ = std::move(inputs);
  inputs_.insert(inputs_.end(), replaceable.begin(), replaceable.end());
  replaceable_ = std::move(replaceable);
}

void Context::plan_output(const std::string& path) {
  plan({path, path == output_ ? "-o" : "an output", false});
  plan({path + ".json", "the manifest of " + path, false});
}

void Context::plan_side_output(const std::string& path, bool make_folder) {
  plan({path, "a side output", make_folder});
}

void Context::plan(Planned p) {
  for (const Planned& q : planned_)
    if (q.path == p.path && q.what == p.what) return;  // planned already (a side output written as planned)
  planned_.push_back(std::move(p));
  if (preflight_done_)
    on_root([&] {
      check_planned(planned_.back(), planned_.size() - 1);
      io::remove_stale_temporaries(planned_.back().path);
    });
}

// Whether planned file `index` (0: -o, 1: its manifest) may replace input `in`: only -o an input the
// tool declares replaceable (a tree continued in place), and -o's manifest that input's manifest.
bool may_replace(const std::vector<std::string>& replaceable, std::size_t index, const std::string& planned,
                 const std::string& in) {
  const bool declared =
      std::any_of(replaceable.begin(), replaceable.end(), [&](const std::string& r) { return same_file(r, in); });
  return declared && ((index == 0 && same_file(planned, in)) || (index == 1 && same_file(planned, in + ".json")));
}

// A file of a provenance chain that the planned file `index` may still replace: the input -o replaces
// (--state TREE -o TREE), which the chain holds too when the state was itself continued in place.
bool may_replace_in_chain(const std::vector<std::string>& replaceable, std::size_t index, const std::string& planned,
                          const std::string& in) {
  return std::any_of(replaceable.begin(), replaceable.end(), [&](const std::string& r) {
    return same_file(r, in) && may_replace(replaceable, index, planned, r);
  });
}

void Context::check_planned(const Planned& p, std::size_t index) const {
  for (const std::string& in : inputs_) {
    std::error_code ec;
    if (!fs::exists(in, ec)) continue;
    if ((same_file(p.path, in) || same_file(p.path, in + ".json")) && !may_replace(replaceable_, index, p.path, in))
      throw core::Error::usage(
          "{} ({}) is {}: a tool never writes over its inputs or their manifests (choose another name)", p.path, p.what,
          same_file(p.path, in) ? "the input " + in : "the manifest of the input " + in);
  }
  for (const std::string& in : chain_)
    if ((same_file(p.path, in) || same_file(p.path, in + ".json")) &&
        !may_replace_in_chain(replaceable_, index, p.path, in))
      throw core::Error::usage(
          "{} ({}) is {}, which an input was made from: a tool never writes over its inputs' provenance "
          "(choose another name)",
          p.path, p.what, same_file(p.path, in) ? in : "the manifest of " + in);
  for (std::size_t i = 0; i < index; ++i)
    if (same_file(p.path, planned_[i].path))
      throw core::Error::usage("{} ({}) and {} ({}) are the same file: choose other names", planned_[i].path,
                               planned_[i].what, p.path, p.what);
  check_destination(p.path, p.make_folder);
}

void Context::preflight() {
  preflight_done_ = true;
  on_root([&] {
    for (const std::string& in : inputs_) check_input_type(in);
    for (std::size_t i = 0; i < planned_.size(); ++i) check_planned(planned_[i], i);
    // Temporary files of killed runs in every folder this run writes to (docs/cli.md).
    for (const Planned& p : planned_) io::remove_stale_temporaries(p.path);
  });
}

void Context::check_not_an_output(const std::string& input) const {
  for (std::size_t i = 0; i < planned_.size(); ++i) {
    const Planned& p = planned_[i];
    if ((same_file(p.path, input) || same_file(p.path, input + ".json")) &&
        !may_replace(replaceable_, i, p.path, input))
      throw core::Error::usage(
          "{} ({}) is {}: a tool never writes over its inputs or their manifests (choose another name)", p.path, p.what,
          same_file(p.path, input) ? "the input " + input : "the manifest of the input " + input);
  }
}

void Context::protect_chain(const std::string& product) {
  std::vector<std::string> todo{product};
  while (!todo.empty()) {
    const std::string at = todo.back();
    todo.pop_back();
    manifest::Json m;
    try {
      m = manifest::read_manifest(at);
    } catch (const core::Error&) {
      continue;  // not a phew product (a snapshot), or no longer there: its own path is protected already
    }
    if (!m.contains("inputs") || !m["inputs"].is_array()) continue;
    for (const manifest::Json& in : m["inputs"]) {
      if (!in.is_object() || !in.contains("path") || !in["path"].is_string()) continue;
      const std::string path = manifest::decode_path(in["path"].get<std::string>());
      if (std::any_of(chain_.begin(), chain_.end(), [&](const std::string& c) { return same_file(c, path); })) continue;
      chain_.push_back(path);
      for (std::size_t i = 0; i < planned_.size(); ++i)
        if ((same_file(planned_[i].path, path) || same_file(planned_[i].path, path + ".json")) &&
            !may_replace_in_chain(replaceable_, i, planned_[i].path, path))
          throw core::Error::usage(
              "{} ({}) is {}, which {} was made from: a tool never writes over its inputs' provenance "
              "(choose another name)",
              planned_[i].path, planned_[i].what, same_file(planned_[i].path, path) ? path : "the manifest of " + path,
              product);
      todo.push_back(path);
    }
  }
}

manifest::Input Context::add_input(const std::string& path, const std::vector<std::string>& kinds) {
  manifest::Input in;
  on_root([&] {
    in = manifest::check_phew_input(path, kinds);
    check_not_an_output(path);
    protect_chain(path);
    io::check_product(path, in.kind);  // every declared value, whatever of the product this tool reads
    manifest_.add_input(in);
  });
  // Field by field: the path (given on every rank) need not be UTF-8, so it never goes through JSON.
  in.path = path;
  comm_.broadcast(in.kind);
  comm_.broadcast(in.size);
  comm_.broadcast(in.fingerprint);
  comm_.broadcast(in.manifest_id);
  std::string provenance = comm_.root() ? in.provenance.dump() : std::string();
  comm_.broadcast(provenance);
  in.provenance = manifest::Json::parse(provenance);
  return in;
}

void Context::add_external_inputs(const std::vector<std::string>& paths, const std::string& kind) {
  add_inputs([&] {
    std::vector<manifest::Input> out;
    for (const std::string& p : paths) out.push_back(manifest::external_input(p, kind));
    return out;
  });
}

void Context::add_inputs(const std::function<std::vector<manifest::Input>()>& find) {
  on_root([&] {
    for (const manifest::Input& in : find()) {
      check_not_an_output(in.path);
      manifest_.add_input(in);
    }
  });
}

void Context::on_root(const std::function<void()>& work) {
  mpi::agree(comm_, [&] {
    if (comm_.root()) work();
  });
}

void Context::write_output(const std::function<void(io::File&)>& write) {
  write_output(output_, spec_.output_kind, write);
}

void Context::write_output(const std::string& path, const std::string& kind,
                           const std::function<void(io::File&)>& write) {
  plan_output(path);
  io::AtomicOutput out(path, comm_);
  io::File file = io::File::create(out.temp_path(), comm_, out.final_path());
  write(file);
  finish_output(file, out, kind);
}

void Context::side_output(const std::string& path, const std::string& kind, const std::string& content) {
  plan_side_output(path);
  on_root([&] {
    commit_.add_text(path, content);
    manifest_.side_output(path, kind, content.size(), manifest::fingerprint_text(content));
  });
}

void Context::rank_files(const std::vector<std::pair<std::string, std::string>>& files) {
  mpi::agree(comm_, [&] {
    for (const auto& [path, content] : files) commit_.add_text(path, content);
  });
}

void Context::finish_output(io::File& file, io::AtomicOutput& out) { finish_output(file, out, spec_.output_kind); }

void Context::finish_output(io::File& file, io::AtomicOutput& out, const std::string& kind) {
  const std::string& path = out.final_path();
  manifest_.set_kind(kind);
  phase("finish");
  timer_.stop();
  end_phase_traffic();
  for (const auto& [name, seconds] : timer_.phases()) manifest_.timing(name, seconds);
  record_exchanges();  // collective: every rank finishes each output together
  manifest_.summary("peak_memory_rank0_bytes", core::peak_rss_bytes());

  // Rank 0's manifest is the one recorded; every rank writes the same attribute (a collective call).
  std::string text = comm_.root() ? manifest::to_text(manifest_.finish(path, 0, "")) : std::string();
  comm_.broadcast(text);
  file.write_attribute("/", "manifest", text);
  file.close();
  // Fingerprinted before anything moves: the manifest beside the file is complete when the file is.
  on_root([&] {
    for (const std::string& in : manifest_.input_paths()) check_not_an_output(in);  // the last guard
    const auto size = std::filesystem::file_size(out.temp_path());
    const std::string fp = manifest::fingerprint_file(out.temp_path());
    commit_.add(out.temp_path(), path);
    commit_.add_text(path + ".json", manifest::to_text(manifest_.finish(path, size, fp)));
    core::log::info("wrote {} ({})", path, core::log::bytes(static_cast<double>(size)));
  });
  out.hand_over();
}

void Context::commit() { commit_.apply(comm_); }

namespace {

// The files named by the options (positional inputs included; PEAKS:VOTERS pairs split; the spec's
// output options left out), for the preflight. Inputs the tool declares replaceable are listed apart, or only they.
std::vector<std::string> files_in_options(const CLI::App& app, const ToolSpec& spec, bool replaceable_ones = false) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : app.get_options()) {
    const std::string name = opt->get_lnames().empty() ? opt->get_name() : opt->get_lnames().front();
    const auto& replaceable = spec.replaceable_inputs;
    const bool may_replace = std::find(replaceable.begin(), replaceable.end(), "--" + name) != replaceable.end();
    const auto& outputs = spec.output_options;
    const bool names_output = std::find(outputs.begin(), outputs.end(), "--" + name) != outputs.end();
    if (is_common_option(name) || names_output || may_replace != replaceable_ones) continue;
    for (const std::string& value : opt->results()) {
      out.push_back(value);
      for (std::size_t colon = value.find(':'); colon != std::string::npos; colon = value.find(':', colon + 1))
        out.push_back(value.substr(colon + 1)), out.push_back(value.substr(0, colon));
    }
  }
  return out;
}

// After --help or --version: 0, or 4 with one line when stdout could not take them (a full device).
int help_written(const ToolSpec& spec, const mpi::Comm& comm) {
  if (!comm.root() || (std::fflush(stdout) == 0 && !std::ferror(stdout))) return 0;
  print_error(spec.name, fmt::format("cannot write to the standard output: {}", std::strerror(errno)));
  return exit_code(core::ErrorKind::io);
}

// The --config file is read by CLI11 during the parse, which would block on a FIFO: it is checked first.
void check_config_file(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) core::check_readable_file(argv[i + 1]);
    if (a.rfind("--config=", 0) == 0) core::check_readable_file(a.substr(9));
  }
}

}  // namespace

int run_tool(const ToolSpec& spec, int argc, char** argv, const DeclareOptions& declare, const ToolBody& body) {
  core::return_big_buffers_to_the_system();
  core::back_big_buffers_with_huge_pages();
  mpi::Environment env(argc, argv);
  const mpi::Comm comm;
  io::install_cleanup_on_signals();

  CLI::App app{spec.summary, spec.name};
  app.config_formatter(std::make_shared<JsonConfig>());
  app.set_config("--config", "", "Read options from a JSON file; keys are the long option names");
  app.allow_config_extras(false);  // a misspelt key is an error, not silently ignored
  app.footer("Example:\n  " + spec.example + "\n\n" + kExitCodes + "\nDocumentation: docs/tools/" + spec.name + ".md");
  app.get_formatter()->column_width(34);
  std::string output;
  bool verbose = false, quiet = false;
  app.add_flag_callback(
      "--version",
      [&] {
        if (comm.root()) std::fputs((spec.name + " " + core::build_details()).c_str(), stdout);
        throw CLI::Success();
      },
      "Print version and build details, then exit");
  app.add_flag("-v,--verbose", verbose, "Log more: per-phase timings and details");
  app.add_flag("-q,--quiet", quiet, "Log only errors");
  app.add_option("-o,--output", output, "Output file (its manifest is OUTPUT.json)")
      ->required()
      ->check([](const std::string& o) -> std::string {  // refused before any work
        if (o.empty()) return "an empty name: give the output file";
        std::error_code ec;
        return std::filesystem::is_directory(o, ec) ? o + " is a folder: give the output file" : "";
      });
  declare(app);

  try {
    check_config_file(argc, argv);
  } catch (const core::Error& e) {
    if (comm.root()) print_error(spec.name, e.what());
    return exit_code(e.kind());
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (comm.root()) std::fputs(app.help().c_str(), stdout);
    return help_written(spec, comm);
  } catch (const CLI::Success&) {
    return help_written(spec, comm);
  } catch (const CLI::ParseError& e) {
    if (comm.root()) print_error(spec.name, std::string(e.what()) + " (see --help)");
    return exit_code(core::ErrorKind::usage);
  }

  core::log::configure(spec.name, comm.rank(),
                       quiet     ? core::log::Level::quiet
                       : verbose ? core::log::Level::verbose
                                 : core::log::Level::info);
  std::vector<std::string> command_line(argv, argv + argc);
  manifest::Builder builder(spec.name, command_line, comm.size());
  builder.set_kind(spec.output_kind);
  for (const CLI::Option* opt : app.get_options()) {
    const std::string name = opt->get_lnames().empty() ? opt->get_name() : opt->get_lnames().front();
    if (!is_common_option(name)) builder.parameter(name, option_value(opt));
  }
  Context ctx(spec, comm, output, std::move(builder));

  core::ErrorKind kind;
  std::string message;
  bool agreed = false;
  // An internal error is a bug of ours (or the machine's): the report says where it happened.
  const auto internal_error = [&](int rank, std::string_view what) {
    return fmt::format("internal error in phase {} on rank {}: {}", ctx.current_phase(), rank, what);
  };
  try {
    std::vector<std::string> inputs = files_in_options(app, spec);
    if (const CLI::Option* config = app.get_config_ptr(); config && config->count() > 0)
      inputs.push_back(config->as<std::string>());  // the options' file is an input too
    ctx.set_command_line_inputs(std::move(inputs), files_in_options(app, spec, true));
    body(ctx);
    ctx.commit();
    io::close_library();
    return 0;
  } catch (const core::Error& e) {
    kind = e.kind();
    message = e.what();
    agreed = e.agreed();
    if (kind == core::ErrorKind::internal) message = internal_error(agreed ? e.raised_on() : comm.rank(), message);
  } catch (const std::filesystem::filesystem_error& e) {
    // The file system refused (a loop of symbolic links, a folder that vanished): an I/O error (exit 4).
    kind = core::ErrorKind::io;
    message = e.path1().empty() ? e.code().message() : fmt::format("{}: {}", e.path1().string(), e.code().message());
  } catch (const std::bad_alloc&) {
    kind = core::ErrorKind::internal;
    message = fmt::format("out of memory in phase {} on rank {}", ctx.current_phase(), comm.rank());
  } catch (const std::exception& e) {
    // A library's exception (std::out_of_range, ...) is a bug of ours too.
    kind = core::ErrorKind::internal;
    message = internal_error(comm.rank(), e.what());
  }
  // Before the first phase, errors come from the command line, the same on every rank.
  if (agreed || !ctx.started() || comm.size() == 1) {
    if (comm.root()) print_error(spec.name, message);
    if (io::unusable()) {            // see io::unusable(): no HDF5 or MPI shutdown, and no destructors
      io::remove_temporary_files();  // so the temporary files of ctx's Commit go now (docs/cli.md)
      std::_Exit(exit_code(kind));
    }
    io::close_abandoned_files();  // every rank failed together, so every rank closes them together
    io::close_library();
    return exit_code(kind);
  }
  // Only this rank knows of the failure; the others may wait in a collective forever. End the job now.
  print_error(spec.name, message);
  // MPI_Abort ends this rank without unwinding: the Commit in ctx (finished outputs, manifests, side
  // outputs and quicklooks this rank added) would keep its temporary files. Remove them first (the other
  // ranks are killed by signal and remove theirs in the cleanup handler).
  io::remove_temporary_files();
  mpi::abort(comm, exit_code(kind));
}

}  // namespace phew::tool
