#include <phew/tool/tool.hpp>

#include <phew/core/error.hpp>
#include <phew/core/log.hpp>
#include <phew/core/memory.hpp>
#include <phew/core/version.hpp>
#include <phew/mpi/agree.hpp>
#include <phew/manifest/fingerprint.hpp>
#include <phew/tool/json_config.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace phew::tool {
namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 success, 1 internal error, 2 usage error, 3 bad input, 4 I/O error.";

// True when a and b are the same file (device and inode, through links and other spellings of the path).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

// Error(usage) when `output` is one of `inputs`: a tool never writes over its inputs.
void refuse_output_onto_inputs(const std::string& output, const std::vector<std::string>& inputs) {
  for (const auto& in : inputs)
    if (same_file(output, in))
      throw core::Error::usage("-o {} is the input {}: a tool never writes over its inputs (choose another output name)", output, in);
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
    : spec_(spec), comm_(comm), output_(std::move(output)), manifest_(std::move(builder)) {}

void Context::phase(std::string name) {
  const char* fail = std::getenv("PHEW_TEST_FAIL_AT");
  const char* pause = std::getenv("PHEW_TEST_PAUSE_AT");
  const char* only = std::getenv("PHEW_TEST_FAIL_RANK");
  const bool here = !only || std::atoi(only) == comm_.rank() || (std::atoi(only) < 0 && comm_.rank() == comm_.size() - 1);
  phase_ = name;
  if (pause && name == pause && here) std::this_thread::sleep_for(std::chrono::seconds(60));
  if (fail && name == fail && here) {
    // PHEW_TEST_FAIL_WITH=std: a library's exception, as a bare std::map::at would throw it.
    const char* with = std::getenv("PHEW_TEST_FAIL_WITH");
    if (with && std::string(with) == "std") throw std::out_of_range("map::at");
    throw core::Error::internal("failure injected (PHEW_TEST_FAIL_AT)");
  }
  timer_.start(std::move(name));
}

void Context::check_not_an_input(const std::string& output) const {
  const auto replaces = [&](const std::string& path) { return same_file(output, path); };
  if (std::any_of(replaceable_.begin(), replaceable_.end(), replaces)) return;
  refuse_output_onto_inputs(output, manifest_.input_paths());
}

void Context::side_output(const std::string& path, const std::string& kind, const std::string& content) {
  mpi::agree(comm_, [&] {
    if (!comm_.root()) return;
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
  for (const auto& [name, seconds] : timer_.phases()) manifest_.timing(name, seconds);
  manifest_.summary("peak_memory_rank0_bytes", core::peak_rss_bytes());

  // Rank 0's manifest is the one recorded; every rank writes the same attribute (a collective call).
  std::string text = comm_.root() ? manifest::to_text(manifest_.finish(path, 0, "")) : std::string();
  comm_.broadcast(text);
  file.write_attribute("/", "manifest", text);
  file.close();
  // Fingerprinted before anything moves: the manifest beside the file is complete when the file is.
  mpi::agree(comm_, [&] {
    if (!comm_.root()) return;
    check_not_an_input(path);
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

// The files named by the options (positional inputs included; PEAKS:VOTERS pairs split), for the check
// that -o names none of them. Inputs the tool declares replaceable are listed apart, or only they.
std::vector<std::string> files_in_options(const CLI::App& app, const ToolSpec& spec, bool replaceable_ones = false) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : app.get_options()) {
    const std::string name = opt->get_lnames().empty() ? opt->get_name() : opt->get_lnames().front();
    const auto& replaceable = spec.replaceable_inputs;
    const bool may_replace = std::find(replaceable.begin(), replaceable.end(), "--" + name) != replaceable.end();
    if (is_common_option(name) || may_replace != replaceable_ones) continue;
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

// Before any work: the output's folder exists and is writable, and -o is not one of the inputs.
void check_output(const std::string& output, const std::vector<std::string>& inputs) {
  const std::filesystem::path p(output);
  const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw core::Error::io("{}: output folder {} does not exist", output, dir.string());
  if (access(dir.c_str(), W_OK) != 0) throw core::Error::io("{}: output folder {} is not writable", output, dir.string());
  refuse_output_onto_inputs(output, inputs);
}

}  // namespace

int run_tool(const ToolSpec& spec, int argc, char** argv, const DeclareOptions& declare, const ToolBody& body) {
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
      ->check([](const std::string& o) -> std::string {  // refused before any work (issue 35)
        if (o.empty()) return "an empty name: give the output file";
        std::error_code ec;
        return std::filesystem::is_directory(o, ec) ? o + " is a folder: give the output file" : "";
      });
  declare(app);

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

  core::log::configure(spec.name, comm.rank(), quiet ? core::log::Level::quiet : verbose ? core::log::Level::verbose : core::log::Level::info);
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
    check_output(output, files_in_options(app, spec));
    ctx.allow_replacing(files_in_options(app, spec, true));
    body(ctx);
    ctx.commit();
    io::close_library();
    return 0;
  } catch (const core::Error& e) {
    kind = e.kind();
    message = e.what();
    agreed = e.agreed();
    if (kind == core::ErrorKind::internal) message = internal_error(agreed ? e.raised_on() : comm.rank(), message);
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
    if (io::unusable()) std::_Exit(exit_code(kind));  // see io::unusable(): no HDF5 or MPI shutdown
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
