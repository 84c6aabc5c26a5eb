// Progress of a long loop, for the person waiting: on a terminal a bar redrawn at most 10 times a
// second; in a log (stderr not a terminal) a line every few seconds, "progress: voters: 1,200 of 4,000
// peaks (30%), about 12 s left", and a last line when the loop ends, if any line was written. Only rank 0
// reports and --quiet silences it (the log's info level).
//
// Under MPI each rank counts its own share of the work; rank 0 reports its own share (said so in the
// line), so progress costs no communication and never changes what a tool computes or writes.
//
//   Progress progress("unbind", "clumps", my_clumps.size(), comm.size());
//   for (...) { ...; progress.add(); }
//   progress.finish();  // or let it go out of scope
//
// The interval between log lines is PHEW_PROGRESS_INTERVAL seconds (default 5; 0 = a line per update and
// always the last line, for tests).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace phew::core {

class Progress {
 public:
  // Where progress goes and when: Output::standard() is stderr as above; tests make their own.
  struct Output {
    bool enabled = false;                           // rank 0 and not --quiet
    bool terminal = false;                          // a redrawn bar, else log lines
    double interval = 5.0;                          // seconds between log lines
    std::function<void(const std::string&)> write;  // terminal: raw text; log: the message of one log line
    std::function<double()> clock;                  // seconds, monotonic

    static Output standard();
    static double interval_from_environment();  // PHEW_PROGRESS_INTERVAL, else 5
  };

  // `label` names the loop ("voters"), `items` what it counts ("peaks"), `total` this rank's share;
  // `ranks` > 1 says the numbers are rank 0's share.
  Progress(std::string label, std::string items, std::uint64_t total, int ranks = 1);
  Progress(std::string label, std::string items, std::uint64_t total, int ranks, Output output);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Cheap to call for every item: a clock read, and text only when a line or a redraw is due.
  void update(std::uint64_t done);
  void add(std::uint64_t n = 1) { update(done_ + n); }
  void finish();

 private:
  std::string message(std::uint64_t done, double now, bool last = false) const;
  void draw_bar(std::uint64_t done, double now);

  std::string label_, items_;
  std::uint64_t total_;
  int ranks_;
  Output out_;
  bool active_;
  bool finished_ = false;
  bool wrote_ = false;  // a log line or a bar is out
  std::uint64_t done_ = 0;
  double start_ = 0, last_ = 0;
};

}  // namespace phew::core
