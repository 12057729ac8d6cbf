// SIGINT and SIGTERM at seeded random moments. `loom plan` and `loom fit` run as child processes of
// the real binary (LOOM_BINARY): plan prints the best plans found so far, marked INTERRUPTED, and
// exits 128 + the signal; fit leaves its output complete or untouched, and no temporary. A probe's
// runner over fake benches, in a child of its own, keeps every point it finished.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "core/interrupt.h"
#include "cost/profile.h"
#include "probe/fake_benches.h"
#include "probe/probe_runner.h"
#include "probe/sweep.h"
#include "spec/cluster.h"
#include "support/schema_check.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string Shipped(const std::string& relative) {
  return std::string(LOOM_SOURCE_DIR) + "/" + relative;
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A fresh, empty folder for one test.
fs::path TestDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("loom_interrupt_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The names in |dir| that look like a writer's temporary.
std::vector<std::string> Temporaries(const fs::path& dir) {
  std::vector<std::string> found;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp") != std::string::npos) found.push_back(name);
  }
  return found;
}

struct Finished {
  int status = 0;  // as waitpid reports it
  std::string out, err;
};

// `loom ARGS...` as a child process, its stdout and stderr in files of |dir|.
class LoomProcess {
 public:
  LoomProcess(const std::vector<std::string>& args, const fs::path& dir)
      : out_path_(dir / "stdout.txt"), err_path_(dir / "stderr.txt") {
    std::vector<std::string> argv_text = {LOOM_BINARY};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = ::fork();
    if (pid_ == 0) {  // only async-signal-safe calls until exec
      // A shell starts background jobs with SIGINT ignored, and loom then leaves it so: undo that.
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::dup2(out, STDOUT_FILENO);
      ::dup2(err, STDERR_FILENO);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out);
    ::close(err);
  }

  // Waits until the child catches SIGINT and SIGTERM (its handlers are installed, per
  // /proc/PID/status), so that a signal sent now tests loom's handling, not its start-up.
  bool WaitForHandlers(double timeout_s) {
    const uint64_t wanted = (uint64_t{1} << (SIGINT - 1)) | (uint64_t{1} << (SIGTERM - 1));
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    while (Clock::now() < deadline) {
      std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
      for (std::string line; std::getline(status, line);) {
        if (line.rfind("SigCgt:", 0) == 0 &&
            (std::stoull(line.substr(7), nullptr, 16) & wanted) == wanted)
          return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }

  void Signal(int signal) { ::kill(pid_, signal); }

  // Waits for the child to end; one still running after |timeout_s| is a hang: killed, and the test
  // fails.
  Finished Wait(double timeout_s) {
    Finished f;
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    while (::waitpid(pid_, &f.status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ADD_FAILURE() << "loom did not end within " << timeout_s << " s of the signal";
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &f.status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    f.out = ReadText(out_path_);
    f.err = ReadText(err_path_);
    return f;
  }

 private:
  fs::path out_path_, err_path_;
  pid_t pid_ = -1;
};

std::string Describe(const Finished& f) {
  std::string text = WIFEXITED(f.status) ? "exit status " + std::to_string(WEXITSTATUS(f.status))
                     : WIFSIGNALED(f.status)
                         ? "killed by signal " + std::to_string(WTERMSIG(f.status))
                         : "status " + std::to_string(f.status);
  return text + "\n--- stdout:\n" + f.out.substr(0, 4000) + "\n--- stderr:\n" +
         f.err.substr(0, 2000);
}

bool ExitedWith(const Finished& f, int code) {
  return WIFEXITED(f.status) && WEXITSTATUS(f.status) == code;
}

int RandomSignal(std::mt19937& rng) {
  return std::uniform_int_distribution<int>(0, 1)(rng) == 0 ? SIGINT : SIGTERM;
}

// The rows of the ranked table: the lines after its "rank" header up to the first blank one.
int TableRows(const std::string& out) {
  std::istringstream in(out);
  bool in_table = false;
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (!in_table) {
      in_table = line.rfind("rank", 0) == 0;
    } else if (line.empty()) {
      break;
    } else if (line.find("(no plan simulated") == std::string::npos) {
      ++rows;
    }
  }
  return in_table ? rows : -1;
}

constexpr int kTop = 10;

// The plan searches: Llama 3 70B on 64 H100s (about 100,000 strategies, most of its few seconds
// spent bounding), and Llama 3 8B on 16 simulated exhaustively (about 35,000 simulations, tens of
// seconds): a signal after a second or two lands in its simulation phase.
std::vector<std::string> PlanArgs(bool exhaustive) {
  std::vector<std::string> args = {"plan",  "--cluster", Shipped("hardware/clusters/dgx-h100.json"),
                                   "--seq", "4096",      "--threads",
                                   "2"};
  const std::vector<std::string> search =
      exhaustive ? std::vector<std::string>{"--model",        Shipped("models/llama3-8b.json"),
                                            "--gpus",         "16",
                                            "--global-batch", "32",
                                            "--exhaustive"}
                 : std::vector<std::string>{"--model",        Shipped("models/llama3-70b.json"),
                                            "--gpus",         "64",
                                            "--global-batch", "256"};
  args.insert(args.end(), search.begin(), search.end());
  return args;
}

// Runs `loom plan`, sends |signal| |delay_s| after its handlers are in place, and returns how it
// ended.
Finished InterruptPlan(const std::vector<std::string>& args, int signal, double delay_s,
                       const fs::path& dir) {
  LoomProcess loom(args, dir);
  EXPECT_TRUE(loom.WaitForHandlers(30))
      << "loom plan never installed its SIGINT and SIGTERM handlers";
  std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
  loom.Signal(signal);
  return loom.Wait(30);
}

// The text output of a plan that |signal| interrupted: the partial table marked INTERRUPTED with
// how far the search got, or (the signal came as it was printing) the whole result; never a crash.
void ExpectInterruptedText(const Finished& f, int signal) {
  const std::string name = signal == SIGINT ? "SIGINT" : "SIGTERM";
  if (ExitedWith(f, kExitOk)) {  // the search ended before the signal
    EXPECT_EQ(TableRows(f.out), kTop) << Describe(f);
    return;
  }
  ASSERT_TRUE(ExitedWith(f, kExitSignalBase + signal)) << Describe(f);
  EXPECT_EQ(signal == SIGINT ? kExitInterrupted : kExitTerminated, kExitSignalBase + signal);
  EXPECT_NE(f.err.find("loom: interrupted by " + name), std::string::npos) << Describe(f);
  ASSERT_EQ(f.out.rfind("loom plan: ", 0), 0u) << Describe(f);
  const int rows = TableRows(f.out);
  if (f.out.find("INTERRUPTED") == std::string::npos) {  // the signal came after the search
    EXPECT_EQ(rows, kTop) << Describe(f);
    return;
  }
  // "INTERRUPTED by SIGINT while simulating: a PARTIAL result. 4,414 of 22,088 ..." (parsed by
  // hand: g++ 12's -Wmaybe-uninitialized misfires inside <regex> under the sanitizers).
  const std::string head = "INTERRUPTED by " + name + " while ";
  const size_t at = f.out.find(head);
  ASSERT_NE(at, std::string::npos) << Describe(f);
  std::istringstream rest(f.out.substr(at + head.size()));
  std::string phase, a, partial, result, done, of, total;
  rest >> phase >> a >> partial >> result >> done >> of >> total;
  ASSERT_TRUE((phase == "bounding:" || phase == "simulating:") && partial == "PARTIAL" &&
              result == "result." && of == "of")
      << Describe(f);
  const auto number = [](std::string digits) {
    digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
    return std::stoll(digits);
  };
  EXPECT_LE(number(done), number(total)) << Describe(f);
  if (phase == "bounding:") {
    EXPECT_EQ(rows, 0) << Describe(f);
  } else {
    EXPECT_LE(rows, std::min<int64_t>(kTop, number(done)))
        << Describe(f);  // the best of those simulated
  }
  EXPECT_NE(f.out.find("\nINTERRUPTED (" + name + "): the ranking above is partial"),
            std::string::npos)
      << Describe(f);
}

TEST(PlanInterrupted, PrintsTheBestPlansSoFarMarkedPartialAndExitsWith128PlusTheSignal) {
  const fs::path dir = TestDir("plan_text");
  std::mt19937 rng(20);
  for (int run = 0; run < 5; ++run) {
    const bool exhaustive = run >= 2;
    const double delay_s =
        std::uniform_real_distribution<double>(exhaustive ? 1.0 : 0.0, exhaustive ? 2.5 : 1.2)(rng);
    const int signal = RandomSignal(rng);
    SCOPED_TRACE("run " + std::to_string(run) + ": " + SignalName(signal) + " after " +
                 std::to_string(delay_s) + " s" + (exhaustive ? ", exhaustive search" : ""));
    ExpectInterruptedText(InterruptPlan(PlanArgs(exhaustive), signal, delay_s, dir), signal);
  }
}

TEST(PlanInterrupted, JsonSaysHowFarTheSearchGot) {
  const fs::path dir = TestDir("plan_json");
  std::mt19937 rng(21);
  for (int run = 0; run < 2; ++run) {
    const double delay_s = std::uniform_real_distribution<double>(0.2, 2.5)(rng);
    const int signal = RandomSignal(rng);
    SCOPED_TRACE(SignalName(signal) + " after " + std::to_string(delay_s) + " s");
    std::vector<std::string> args = PlanArgs(true);
    args.push_back("--json");
    const Finished f = InterruptPlan(args, signal, delay_s, dir);
    ASSERT_TRUE(ExitedWith(f, kExitSignalBase + signal) || ExitedWith(f, kExitOk)) << Describe(f);
    const nlohmann::json j = nlohmann::json::parse(f.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not one JSON object: " << Describe(f);
    EXPECT_TRUE(MatchesSchema(j)) << Describe(
        f);  // an interrupted search keeps the JSON contract too
    EXPECT_EQ(j["schema"], "loom.plan/1");
    const nlohmann::json& stop = j["search"]["interrupted"];
    if (stop.is_null()) {  // finished before the signal
      EXPECT_EQ(j["plans"].size(), static_cast<size_t>(kTop)) << Describe(f);
      continue;
    }
    EXPECT_EQ(stop["signal"], SignalName(signal));
    EXPECT_TRUE(stop["phase"] == "bounding" || stop["phase"] == "simulating") << stop;
    EXPECT_LE(stop["strategies_bounded"].get<int64_t>(), stop["strategies"].get<int64_t>()) << stop;
    EXPECT_EQ(stop["strategies"], j["search"]["enumerated"]);
    EXPECT_LE(stop["candidates_simulated"].get<int64_t>(), stop["candidates"].get<int64_t>())
        << stop;
    EXPECT_EQ(stop["candidates_simulated"], j["search"]["simulated"]);
    EXPECT_LE(j["plans"].size(), stop["candidates_simulated"].get<size_t>()) << Describe(f);
    EXPECT_FALSE(j.contains("emit"));
  }
}

// Sends |signal| to |loom| the moment a temporary file appears in |dir| (inotify), so that it lands
// while the file is being written; returns false when none appeared within |timeout_s| (the
// signal is then not sent).
bool SignalWhenATemporaryAppears(int inotify, LoomProcess& loom, int signal, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  alignas(inotify_event) char events[4096];
  while (Clock::now() < deadline) {
    pollfd ready = {inotify, POLLIN, 0};
    if (::poll(&ready, 1, 10) <= 0) continue;
    const ssize_t n = ::read(inotify, events, sizeof events);
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(events + at);
      if (e->len > 0 && std::string(e->name).find(".tmp") != std::string::npos) {
        loom.Signal(signal);
        return true;
      }
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  return false;
}

// `loom fit` of the synthetic A100 profile into --output, interrupted at random moments over its
// whole run and at the moment its temporary appears: the output is absent or the old file, or
// complete (byte for byte what an uninterrupted fit writes), and no temporary is left beside it.
TEST(FitInterrupted, TheOutputIsTheOldFileOrTheNewOneAndNoTemporaryRemains) {
  const fs::path dir = TestDir("fit");
  const std::string gpu = (dir / "gpu.json").string();
  fs::copy_file(Shipped("hardware/gpus/a100-sxm4-80gb.json"), gpu);
  const std::string old_text = ReadText(gpu);
  const fs::path output = dir / "calibrated.json";
  const std::vector<std::string> args = {
      "fit",      Shipped("tests/cli/data/profile_a100_synthetic.json"),
      "--gpu",    gpu,
      "--output", output.string()};
  const auto start = Clock::now();
  const Finished reference = LoomProcess(args, dir).Wait(60);
  const double whole_s = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_TRUE(ExitedWith(reference, kExitOk)) << Describe(reference);
  const std::string new_text = ReadText(output);
  ASSERT_NE(new_text, old_text);

  const int inotify = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  ASSERT_GE(inotify, 0);
  ASSERT_GE(::inotify_add_watch(inotify, dir.c_str(), IN_CREATE), 0);
  std::mt19937 rng(22);
  int mid_write = 0;
  for (int run = 0; run < 12; ++run) {
    const bool at_the_write = run % 2 == 1;
    const bool had_old = run / 2 % 2 == 1;
    fs::remove(output);
    if (had_old) fs::copy_file(gpu, output);
    const double delay_s = std::uniform_real_distribution<double>(0, 1.2 * whole_s)(rng);
    const int signal = RandomSignal(rng);
    SCOPED_TRACE(
        "run " + std::to_string(run) + ": " + SignalName(signal) +
        (at_the_write ? " as the temporary appears" : " after " + std::to_string(delay_s) + " s"));
    for (char drain[4096]; ::read(inotify, drain, sizeof drain) > 0;) {
    }
    LoomProcess loom(args, dir);
    bool sent = true;
    if (at_the_write) {
      sent = SignalWhenATemporaryAppears(inotify, loom, signal, 30);
      EXPECT_TRUE(sent) << "loom fit wrote no temporary beside " << output;
      mid_write += sent;
    } else {
      std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
      loom.Signal(signal);
    }
    const Finished f = loom.Wait(30);
    const bool by_signal = (WIFSIGNALED(f.status) && WTERMSIG(f.status) == signal) ||
                           ExitedWith(f, kExitSignalBase + signal);
    EXPECT_TRUE(by_signal || ExitedWith(f, kExitOk)) << Describe(f);
    if (fs::exists(output)) {
      const std::string text = ReadText(output);
      EXPECT_TRUE(text == new_text || (had_old && text == old_text))
          << "a partial or foreign file:\n"
          << text;
    }
    if (ExitedWith(f, kExitOk) || (at_the_write && sent)) {  // the write in progress was finished
      EXPECT_EQ(ReadText(output), new_text);
    }
    EXPECT_EQ(Temporaries(dir), std::vector<std::string>());
  }
  ::close(inotify);
  EXPECT_EQ(mid_write, 6);
}

// A probe over fake benches (the 678 GEMM, attention, memory-bound and host points of the generic
// sweep), interrupted in a child process; the profile is read back here.
class ProbeInterrupted : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "fast");  // a fork: the loop's earlier runs are not run again
    dir_ = TestDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    options_.output_path = (dir_ / "profile.json").string();
    options_.settings.repeats = 3;
    options_.date = "2026-11-28";
    SweepOptions sweep;
    sweep.kinds = {ProbeKind::kGemm, ProbeKind::kAttention, ProbeKind::kMemory, ProbeKind::kHost};
    Result<std::vector<ProbePoint>> points = PlanSweep(sweep);
    ASSERT_TRUE(points.ok()) << points.status().message();
    points_ = *points;
  }

  // Runs the sweep in this process; |kernels| stands for the GPU.
  [[noreturn]] void Probe(testing::FakeKernelBench& kernels) {
    testing::FakeLauncher launcher({"host"});
    kernels.fp8_unsupported = false;  // every point goes through before_each
    Result<ProbeSummary> s =
        RunProbe(points_, kernels.Facts(), launcher, &kernels, nullptr, options_, {});
    std::exit(s.ok() ? 0 : 1);
  }

  int64_t Entries() {
    Result<Profile> p = ReadProfile(options_.output_path);
    EXPECT_TRUE(p.ok()) << p.status().message();
    if (!p.ok()) return -1;
    return static_cast<int64_t>(p->samples.size() + p->host_samples.size() + p->collectives.size() +
                                p->failures.size());
  }

  fs::path dir_;
  ProbeRunOptions options_;
  std::vector<ProbePoint> points_;
};

// Between points (the signal raised as the next measurement starts): the profile holds exactly the
// points finished.
TEST_F(ProbeInterrupted, BetweenPointsTheProfileKeepsEveryPointFinished) {
  // Every fifth point of the sweep, each kind still in it: the profile is rewritten after every
  // point, so the whole sweep would take seconds.
  std::vector<ProbePoint> thinned;
  for (size_t i = 0; i < points_.size(); i += 5) thinned.push_back(points_[i]);
  points_ = thinned;
  std::mt19937 rng(23);
  for (int run = 0; run < 3; ++run) {
    const int finished =
        std::uniform_int_distribution<int>(1, static_cast<int>(points_.size()) - 1)(rng);
    const int signal = RandomSignal(rng);
    SCOPED_TRACE(SignalName(signal) + " before point " + std::to_string(finished + 1) + " of " +
                 std::to_string(points_.size()));
    fs::remove(options_.output_path);
    EXPECT_EXIT(
        {
          testing::FakeKernelBench kernels;
          kernels.before_each = [=](int done) {
            if (done == finished) std::raise(signal);
          };
          Probe(kernels);
        },
        ::testing::KilledBySignal(signal), "");
    EXPECT_EQ(Entries(), finished);
    EXPECT_EQ(Temporaries(dir_), std::vector<std::string>());
  }
}

// At any moment (from another thread, most likely while a profile is being rewritten): the
// profile is complete and loads, and no temporary is left.
TEST_F(ProbeInterrupted, AtAnyMomentTheProfileLoadsAndNoTemporaryRemains) {
  std::mt19937 rng(24);
  for (int run = 0; run < 4; ++run) {
    const int delay_us = std::uniform_int_distribution<int>(1000, 150000)(rng);
    const int signal = RandomSignal(rng);
    SCOPED_TRACE(SignalName(signal) + " after " + std::to_string(delay_us) + " us");
    fs::remove(options_.output_path);
    EXPECT_EXIT(
        {
          std::thread([delay_us, signal] {
            std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
            ::kill(::getpid(), signal);
          }).detach();
          testing::FakeKernelBench kernels;
          Probe(kernels);
        },
        [signal](int status) {
          return (WIFSIGNALED(status) && WTERMSIG(status) == signal) ||
                 (WIFEXITED(status) && WEXITSTATUS(status) == 0);
        },
        "");
    if (fs::exists(options_.output_path)) {
      EXPECT_GE(Entries(), 0);
    }
    EXPECT_EQ(Temporaries(dir_), std::vector<std::string>());
  }
}

}  // namespace
}  // namespace loom
