#include <phew/io/atomic_output.hpp>

#include <phew/core/error.hpp>
#include <phew/core/watchdog.hpp>
#include <phew/mpi/agree.hpp>

#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string_view>
#include <string>
#include <thread>

namespace phew::io {
namespace {

namespace fs = std::filesystem;

// Temporary paths to unlink from a signal handler: fixed storage, no allocation in the handler. A slot
// is claimed, then its path written, then published: the handler (on any thread, at any moment) reads
// only published slots, never a path half-copied over an older one.
constexpr std::size_t kSlots = 64;
constexpr std::size_t kPathMax = 4096;
enum SlotState : int { kFree, kWriting, kPublished };
std::array<std::array<char, kPathMax>, kSlots> g_paths{};
std::array<std::atomic<int>, kSlots> g_state{};

int register_temp(const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  for (std::size_t i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (g_state[i].compare_exchange_strong(expected, kWriting)) {
      std::memcpy(g_paths[i].data(), path.c_str(), path.size() + 1);
      g_state[i].store(kPublished);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void unregister_temp(int slot) {
  if (slot >= 0) g_state[static_cast<std::size_t>(slot)].store(kFree);
}

void unlink_registered() {
  for (std::size_t i = 0; i < kSlots; ++i)
    if (g_state[i].load() == kPublished) unlink(g_paths[i].data());
}

// Set when a commit starts: from then on a termination signal is ignored, so the run finishes the
// renames and exits 0. Blocking the signals (below) covers only the thread that commits; the kernel may
// deliver them to any other thread (MPI's progress thread, the watchdog), whose handler sees this flag.
std::atomic<bool> g_holding{false};

extern "C" void cleanup_handler(int sig) {
  if (g_holding.load()) return;
  unlink_registered();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// The owner part of temporary names: this host, as 8 hex digits (FNV-1a of its name), so that a name
// stays short however long the host name is.
std::string host_tag() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) std::strcpy(name, "host");
  std::uint32_t h = 2166136261u;
  for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  return fmt::format("{:08x}", h);
}

// The host as the old names spelt it (".NAME.partial-HOST-PID"), to clean up after older versions.
std::string old_host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "host";
  std::string s(name);
  for (char& c : s)
    if (c == '/' || c == '-') c = '_';
  return s;
}

fs::path folder_of(const std::string& final_path) {
  const fs::path p(final_path);
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

constexpr std::string_view kTempPrefix = ".phew-";

// True when `pid` names no process on this host (kill(pid, 0) fails with ESRCH).
bool process_gone(const std::string& pid_text) {
  char* end = nullptr;
  const long pid = std::strtol(pid_text.c_str(), &end, 10);
  if (pid_text.empty() || *end != '\0' || pid <= 0) return false;
  return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// The PID that owns temporary file `name` when it was made on this host, else "" (not a temporary
// file, another host's, or unreadable). Names: ".phew-HOST8-PID-XXXXXX" (docs/cli.md), and the older
// ".NAME.partial-HOST-PID" and ".NAME.partial-PID".
std::string owner_on_this_host(const std::string& name) {
  if (name.rfind(kTempPrefix, 0) == 0) {
    const std::string rest = name.substr(kTempPrefix.size());  // HOST8-PID-XXXXXX
    const auto a = rest.find('-'), b = rest.rfind('-');
    if (a == std::string::npos || b == a || rest.substr(0, a) != host_tag()) return "";
    return rest.substr(a + 1, b - a - 1);
  }
  const auto at = name.find(".partial-");
  if (name.empty() || name[0] != '.' || at == std::string::npos) return "";
  std::string owner = name.substr(at + 9);  // HOST-PID, or PID from older versions
  const auto dash = owner.rfind('-');
  if (dash == std::string::npos) return owner;
  return owner.substr(0, dash) == old_host_name() ? owner.substr(dash + 1) : "";
}

std::string temp_name_for(const std::string& final_path) {
  const fs::path dir = folder_of(final_path);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw core::Error::io("{}: output folder {} does not exist", final_path, dir.string());
  if (access(dir.c_str(), W_OK) != 0)
    throw core::Error::io("{}: output folder {} is not writable", final_path, dir.string());
  // The host and PID name the owner (for the cleanup after a killed run); six random characters tell a
  // process's files apart. Short, whatever the output's name (Open MPI extends it for its own files).
  static std::mt19937_64 random(std::random_device{}() ^ static_cast<std::uint64_t>(getpid()));
  static constexpr std::string_view kChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const std::string owner = std::string(kTempPrefix) + host_tag() + "-" + std::to_string(getpid()) + "-";
  for (;;) {
    std::string name = owner;
    for (int i = 0; i < 6; ++i) name += kChars[random() % kChars.size()];
    const fs::path p = dir / name;
    if (!fs::exists(p, ec)) return p.string();
  }
}

void hold_termination_signals() {
  g_holding.store(true);
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  sigprocmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace

std::string write_failure(const std::string& path, int error_number) {
  return fmt::format("{}: cannot write: {}", path, std::strerror(error_number));
}

void install_cleanup_on_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, cleanup_handler);
  // Past a file-size limit (ulimit -f) a write then fails with EFBIG, and the run says which output
  // failed (exit 4), instead of dying silently of SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  core::set_last_words(unlink_registered);
}

void remove_temporary_files() { unlink_registered(); }

void remove_stale_temporaries(const std::string& final_path) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder_of(final_path), ec)) {
    const std::string owner = owner_on_this_host(entry.path().filename().string());
    if (!owner.empty() && process_gone(owner)) fs::remove(entry.path(), ec);
  }
}

AtomicOutput::AtomicOutput(std::string final_path, const mpi::Comm& comm) : final_(std::move(final_path)), comm_(comm) {
  std::string error;
  if (comm.root()) {
    try {
      temp_ = temp_name_for(final_);
      remove_stale_temporaries(final_);
    } catch (const core::Error& e) {
      error = e.what();
    }
  }
  comm.broadcast(error);
  if (!error.empty()) throw core::Error(core::ErrorKind::io, error);
  comm.broadcast(temp_);
  // Every rank registers it for the signal cleanup, not rank 0 alone: parallel HDF5 opens the file by
  // name on every rank, so a rank that opens it after a signalled rank 0 has removed it creates it
  // again, and must remove it when its own signal arrives.
  slot_ = register_temp(temp_);
}

AtomicOutput::~AtomicOutput() {
  // Not collective: a failing rank unwinds through here while others may still be working.
  if (comm_.root() && !handed_over_) std::remove(temp_.c_str());
  unregister_temp(slot_);
}

Commit::~Commit() {
  if (applied_) return;
  for (const auto& [temp, final_path] : files_) std::remove(temp.c_str());
  for (int slot : slots_) unregister_temp(slot);
}

void Commit::add(std::string temp, std::string final_path) {
  slots_.push_back(register_temp(temp));
  files_.emplace_back(std::move(temp), std::move(final_path));
}

void Commit::add_text(const std::string& final_path, const std::string& text) {
  const std::string temp = temp_name_for(final_path);
  add(temp, final_path);  // registered first, so that a failed write is removed too
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (!f) throw core::Error::io("{}", write_failure(final_path, errno));
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) throw core::Error::io("{}", write_failure(final_path, written ? errno : write_errno));
}

void Commit::move_into_place() {
  // Test hook (docs/cli.md): PHEW_TEST_PAUSE_AT=commit waits before the last rename (the output's
  // manifest): the moment an old output is half replaced, so a test can signal the run there.
  const char* pause = std::getenv("PHEW_TEST_PAUSE_AT");
  const bool pause_here = pause && std::string(pause) == "commit";
  for (std::size_t i = 0; i < files_.size(); ++i) {
    const auto& [temp, final_path] = files_[i];
    if (pause_here && i > 0 && i + 1 == files_.size()) std::this_thread::sleep_for(std::chrono::seconds(3));
    if (std::rename(temp.c_str(), final_path.c_str()) != 0)
      throw core::Error::io("{}: cannot move the finished file into place: {}", final_path, std::strerror(errno));
  }
  applied_ = true;
  for (int slot : slots_) unregister_temp(slot);
}

void Commit::apply(const mpi::Comm& comm) {
  hold_termination_signals();
  comm.barrier();  // every rank holds them: no rank can be stopped half-way through the commit
  mpi::agree(comm, [&] { move_into_place(); });
  applied_ = true;
}

void write_text_atomically(const std::string& path, const std::string& text) {
  Commit c;
  c.add_text(path, text);
  c.move_into_place();
}

}  // namespace phew::io
