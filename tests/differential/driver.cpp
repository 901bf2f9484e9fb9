#include "driver.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "check.h"
#include "generator.h"
#include "inputs.h"

extern char** environ;

namespace kiln::difftest {
namespace fs = std::filesystem;
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  KILN_CHECK(f.good(), "difftest: cannot write {}", path);
}

std::string tail(const std::string& s, size_t n) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    default: return std::to_string(sig);
  }
}

// This binary, even when a rebuild has replaced the file since it started.
std::string self_exe() { return "/proc/self/exe"; }

// Per-check time limit: compiling a program takes seconds; a check past this has hung.
constexpr unsigned kCheckSeconds = 300;

}  // namespace

const std::string& torch_python() {
  static const std::string python = [] {
    const char* env = std::getenv("KILN_TORCH_PYTHON");
    std::string py = env ? env : std::string(KILN_SOURCE_DIR) + "/.venv/bin/python";
    if (!fs::exists(py)) return std::string();
    std::string cmd = py +
                      " -c \"import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13') else 1)\""
                      " >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0 ? py : std::string();
  }();
  return python;
}

Driver::Driver(bool use_torch) : use_torch_(use_torch && !torch_python().empty()) {
  std::string tmpl = (fs::temp_directory_path() / "kiln-difftest-XXXXXX").string();
  KILN_CHECK(mkdtemp(tmpl.data()) != nullptr, "difftest: cannot make a temporary folder");
  root_ = tmpl;
}

Driver::~Driver() {
  std::error_code ec;
  if (std::getenv("KILN_DIFFTEST_KEEP") == nullptr) fs::remove_all(root_, ec);
}

std::string Driver::new_job_dir(const Program& p) {
  std::string dir = root_ + "/job" + std::to_string(jobs_++);
  fs::create_directories(dir);
  write_file(dir + "/program.txt", p.str());
  if (use_torch_) write_input_files(p, dir);
  return dir;
}

void Driver::run_torch(const std::vector<std::string>& dirs) {
  if (!use_torch_ || dirs.empty()) return;
  std::string cmd = fmt::format("{} {}/tests/differential/torch_ref.py", torch_python(), KILN_SOURCE_DIR);
  for (const auto& d : dirs) cmd += " " + d;
  cmd += " >" + root_ + "/torch.log 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "difftest: torch_ref.py failed:\n%s\n", tail(read_file(root_ + "/torch.log"), 2000).c_str());
  }
}

RunResult Driver::check_in_child(const std::string& dir) {
  ++checks_;
  std::string exe = self_exe(), log = dir + "/log.txt";
  std::vector<std::string> args = {exe, "--check", dir};
  if (use_torch_) args.push_back("--torch");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  KILN_CHECK(rc == 0, "difftest: cannot start {}: {}", exe, std::strerror(rc));
  int status = 0;
  waitpid(pid, &status, 0);
  RunResult r;
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    r.ok = false;
    std::string output = read_file(log), stage = "?";
    size_t at = output.rfind("difftest stage: ");
    if (at != std::string::npos) stage = output.substr(at + 16, output.find('\n', at) - at - 16);
    r.kind = (sig == SIGALRM ? "crash:timeout" : "crash:" + signal_name(sig)) + ":" + stage;
    r.report = fmt::format("the check died of signal {} ({}); its output ends:\n{}", sig, strsignal(sig),
                           tail(read_file(log), 1500));
    return r;
  }
  std::string verdict = read_file(dir + "/verdict.txt");
  if (verdict.empty()) {
    r.ok = false;
    r.kind = "crash:exit";
    r.report = fmt::format("the check exited with status {} and no verdict; its output ends:\n{}", WEXITSTATUS(status),
                           tail(read_file(log), 1500));
    return r;
  }
  size_t nl = verdict.find('\n');
  std::string first = verdict.substr(0, nl);
  r.ok = first == "ok" || first == "ok-raised";
  r.raised = first == "ok-raised";
  if (!r.ok) {
    r.kind = first;
    r.report = nl == std::string::npos ? "" : verdict.substr(nl + 1);
  }
  return r;
}

std::vector<RunResult> Driver::run_each(const std::vector<Program>& programs) {
  std::vector<std::string> dirs;
  for (const auto& p : programs) dirs.push_back(new_job_dir(p));
  run_torch(dirs);
  std::vector<RunResult> results;
  for (const auto& d : dirs) results.push_back(check_in_child(d));
  return results;
}

std::vector<Failure> Driver::run_batched(const std::vector<Program>& programs, size_t batch, size_t max_reruns) {
  // Jobs: merged groups of ordinary programs, and programs that run alone.
  std::vector<std::vector<size_t>> groups;
  std::vector<size_t> open;
  for (size_t i = 0; i < programs.size(); ++i) {
    if (may_raise(programs[i]) || is_large(programs[i])) {
      groups.push_back({i});
      continue;
    }
    open.push_back(i);
    if (open.size() == batch) groups.push_back(std::exchange(open, {}));
  }
  if (!open.empty()) groups.push_back(open);
  std::vector<Program> jobs;
  for (const auto& g : groups) {
    std::vector<Program> members;
    for (size_t i : g) members.push_back(programs[i]);
    jobs.push_back(g.size() == 1 ? members[0] : merge_programs(members));
  }
  std::vector<RunResult> results = run_each(jobs);
  std::vector<Failure> failures;
  for (size_t j = 0; j < jobs.size(); ++j) {
    // A merged batch that raised compared nothing: its programs run alone.
    bool merged = groups[j].size() > 1;
    if (results[j].ok && !(merged && results[j].raised)) continue;
    if (groups[j].size() == 1) {
      failures.push_back({jobs[j], results[j]});
      continue;
    }
    if (groups[j].size() > max_reruns) {
      if (!results[j].ok) failures.push_back({jobs[j], results[j]});
      continue;
    }
    max_reruns -= groups[j].size();
    std::vector<Program> members;
    for (size_t i : groups[j]) members.push_back(programs[i]);
    std::vector<RunResult> alone = run_each(members);
    bool any = false;
    for (size_t m = 0; m < members.size(); ++m) {
      if (!alone[m].ok) failures.push_back({members[m], alone[m]}), any = true;
    }
    if (!any && !results[j].ok) failures.push_back({jobs[j], results[j]});
  }
  return failures;
}

namespace {

// `p` without call `i`: its results replaced by its first value argument. Empty when that is not
// a well-typed program.
std::optional<Program> bypass(const Program& p, size_t i) {
  const OpCall& c = p.calls[i];
  std::set<std::string> defined;
  for (const auto& in : p.inputs) defined.insert(in.name);
  for (size_t k = 0; k < i; ++k) defined.insert(p.calls[k].results.begin(), p.calls[k].results.end());
  std::string with;
  for (const auto& a : c.args) {
    if (defined.contains(a)) {
      with = a;
      break;
    }
  }
  if (with.empty()) return std::nullopt;
  auto replace = [&](const std::string& tok) {
    std::string out = tok;
    for (const auto& r : c.results) {
      if (out == r) return with;
      if (out.front() == '[') {
        for (size_t at = out.find(r); at != std::string::npos; at = out.find(r, at + 1)) {
          char before = out[at - 1], after = at + r.size() < out.size() ? out[at + r.size()] : ']';
          if ((before == '[' || before == ',') && (after == ']' || after == ',')) out.replace(at, r.size(), with);
        }
      }
    }
    return out;
  };
  Program q = p;
  q.calls.erase(q.calls.begin() + static_cast<std::ptrdiff_t>(i));
  for (auto& call : q.calls) {
    for (auto& a : call.args) a = replace(a);
  }
  for (auto& o : q.outputs) o = replace(o);
  std::vector<std::string> unique;
  for (const auto& o : q.outputs) {
    if (std::find(unique.begin(), unique.end(), o) == unique.end()) unique.push_back(o);
  }
  q.outputs = unique;
  q = prune(q);
  try {
    run_program(q, meta_inputs(q), Precision::Native, kMeta);
  } catch (const Error&) {
    return std::nullopt;
  }
  return q;
}

}  // namespace

Program Driver::minimize(const Program& p, const RunResult& failure, int max_steps) {
  Program best = p;
  int steps = 0;
  // PyTorch's results only where the failure is about them (a Python start per step is slow).
  bool torch = use_torch_;
  use_torch_ = torch && failure.kind.find("torch") != std::string::npos;
  auto still_fails = [&](const Program& q) {
    ++steps;
    RunResult r = run_each({q})[0];
    return !r.ok && r.kind == failure.kind;
  };
  // One output at a time.
  if (best.outputs.size() > 1) {
    for (size_t k = 0; k < best.outputs.size() && steps < max_steps; ++k) {
      Program q = best;
      q.outputs = {best.outputs[k]};
      q = prune(q);
      if (still_fails(q)) {
        best = q;
        break;
      }
    }
  }
  // Calls, last first.
  for (size_t i = best.calls.size(); i-- > 0 && steps < max_steps;) {
    if (i >= best.calls.size()) continue;
    auto q = bypass(best, i);
    if (q && still_fails(*q)) best = *q;
  }
  // Inputs: plain values, contiguous layout.
  for (size_t k = 0; k < best.inputs.size() && steps < max_steps; ++k) {
    Program q = best;
    InputSpec& in = q.inputs[k];
    if (in.fill != "normal" && in.fill != "pos" && in.fill != "nonzero") {
      in.fill = "normal";
      if (still_fails(q)) best = q;
    }
    q = best;
    if (q.inputs[k].offset != 0 || !(q.inputs[k].strides == contiguous_strides(q.inputs[k].sizes))) {
      q.inputs[k].offset = 0;
      q.inputs[k].strides = contiguous_strides(q.inputs[k].sizes);
      if (still_fails(q)) best = q;
    }
  }
  use_torch_ = torch;
  return best;
}

std::string save_to_corpus(const Program& p, const RunResult& failure, const std::string& corpus_dir) {
  Program q = p;
  std::erase_if(q.comments, [](const std::string& c) { return c.starts_with("fails:") || c.starts_with("| "); });
  q.comments.push_back("fails: " + failure.kind);
  std::istringstream lines(failure.report);
  std::string line;
  for (int n = 0; n < 4 && std::getline(lines, line); ++n) q.comments.push_back("| " + line.substr(0, 300));
  std::string text = q.str();
  std::string stem = failure.kind;
  for (char& ch : stem) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '-';
  }
  std::string path =
      fmt::format("{}/{}-{:08x}.txt", corpus_dir, stem, static_cast<uint32_t>(std::hash<std::string>{}(p.str())));
  fs::create_directories(corpus_dir);
  write_file(path, text);
  return path;
}

std::vector<std::pair<std::string, Program>> load_corpus(const std::string& corpus_dir) {
  std::vector<std::pair<std::string, Program>> out;
  if (!fs::exists(corpus_dir)) return out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(corpus_dir)) {
    if (e.path().extension() == ".txt") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) out.emplace_back(f.filename().string(), parse_program(read_file(f.string())));
  return out;
}

int check_main(const std::string& dir, bool torch) {
  alarm(kCheckSeconds);
  Verdict v;
  try {
    Program p = parse_program(read_file(dir + "/program.txt"));
    v = check_program(p, torch ? dir : std::string());
  } catch (const std::exception& e) {
    v.ok = false;
    v.kind = "harness-error";
    v.detail = e.what();
  }
  write_file(dir + "/verdict.txt", v.ok ? (v.raised ? "ok-raised\n" : "ok\n") : v.kind + "\n" + v.detail);
  return v.ok ? 0 : 1;
}

}  // namespace kiln::difftest
