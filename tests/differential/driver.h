// Running programs for the differential tier: each check runs in a child process (this binary
// started again with --check), so a crash, a hang or a SIGFPE in compiled code is reported as a
// failure of that program instead of ending the run. Programs run merged in batches (one compile
// for many); a failing batch is rerun program by program. PyTorch's results come from one
// torch_ref.py run per round, when a PyTorch 2.13 venv is present. Failing programs can be
// minimized and saved to the corpus folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "program.h"

namespace kiln::difftest {

struct RunResult {
  bool ok = true;
  std::string kind;     // failure class ("crash:SIGSEGV", "values:compiled-vs-eager:sum", ...)
  std::string report;   // what differed, or the end of the child's output for a crash
  bool raised = false;  // passed because eager and compiled both raised
};

struct Failure {
  Program program;
  RunResult result;
};

// The Python interpreter of <source>/.venv (or $KILN_TORCH_PYTHON) when it imports torch 2.13,
// else empty (and the PyTorch comparison is skipped). Asked once per process.
const std::string& torch_python();

class Driver {
 public:
  explicit Driver(bool use_torch);
  ~Driver();

  // Checks each program alone, each in its own child process.
  std::vector<RunResult> run_each(const std::vector<Program>& programs);
  // Checks `programs` merged `batch` at a time (programs that may raise or have huge inputs run
  // alone); programs of a failing batch are rerun alone, and a batch whose programs all pass alone
  // is itself reported. At most `max_reruns` programs are rerun alone; past that a failing batch
  // is reported as one merged program (bounds the time a run with many failures takes).
  std::vector<Failure> run_batched(const std::vector<Program>& programs, size_t batch, size_t max_reruns = SIZE_MAX);
  // Drops outputs, calls and input peculiarities while the failure keeps its class; at most
  // `max_steps` checks.
  Program minimize(const Program& p, const RunResult& failure, int max_steps);

  size_t checks() const { return checks_; }
  bool use_torch() const { return use_torch_; }

 private:
  std::string new_job_dir(const Program& p);
  void run_torch(const std::vector<std::string>& dirs);
  RunResult check_in_child(const std::string& dir);

  bool use_torch_;
  std::string root_;
  size_t jobs_ = 0, checks_ = 0;
};

// Writes `p` (with its failure in comments) to `corpus_dir`; returns the file's path.
std::string save_to_corpus(const Program& p, const RunResult& failure, const std::string& corpus_dir);
// The corpus programs, by file name.
std::vector<std::pair<std::string, Program>> load_corpus(const std::string& corpus_dir);

// The --check mode of the test binary: checks <dir>/program.txt (against torch results in <dir>
// when --torch is given), writes <dir>/verdict.txt; exit status 0 when it passes.
int check_main(const std::string& dir, bool torch);

}  // namespace kiln::difftest
