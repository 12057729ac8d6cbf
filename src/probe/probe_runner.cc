#include "probe/probe_runner.h"

#include <cstdio>
#include <filesystem>
#include <set>

#include "probe/groups.h"
#include "probe/statistics.h"

namespace loom {
namespace {

// A point's outcome on every rank, agreed by MaxOverRanks: the worst wins.
constexpr double kOk = 0, kFailed = 1, kHung = 2;

struct RunState {
  const std::vector<ProbePoint>* points = nullptr;
  const DeviceFacts* facts = nullptr;
  Launcher* launcher = nullptr;
  KernelBench* kernels = nullptr;
  CollectiveBench* collectives = nullptr;
  const ProbeRunOptions* options = nullptr;
  const std::function<void(const ProbeProgress&)>* progress = nullptr;
  ProfileWriter writer;
  ProbeSummary summary;
  std::set<ProbeGroup> dead_groups;
  int64_t total = 0;  // points to measure in this run

  bool IsRoot() const { return launcher->Rank() == 0; }
};

Profile Header(const DeviceFacts& facts, const std::vector<std::string>& hosts,
               const std::string& date) {
  Profile p;
  p.device = facts.device;
  p.driver_version = facts.driver_version;
  p.cuda_version = facts.cuda_version;
  p.library_versions = facts.library_versions;
  p.date = date;
  p.hosts = hosts;
  return p;
}

// Rank 0: opens the profile, new or resumed.
Status OpenProfile(RunState& s) {
  const ProbeRunOptions& o = *s.options;
  std::error_code ignored;
  const bool exists = std::filesystem::exists(o.output_path, ignored);
  if (exists && !o.resume) {
    return Status::InvalidArgument(
        o.output_path +
        ": exists; pass --resume to continue it (the points it holds are "
        "kept and skipped), or choose another --output");
  }
  if (!exists) return s.writer.Open(o.output_path, Header(*s.facts, s.launcher->Hosts(), o.date));
  Result<Profile> old = ReadProfile(o.output_path);
  if (!old.ok()) {
    return Status::InvalidArgument(old.status().message() +
                                   "\n--resume continues a profile loom probe wrote; "
                                   "move this file away to start a new one");
  }
  if (old->device.name != s.facts->device.name) {
    return Status::InvalidArgument(o.output_path + ": device.name is \"" + old->device.name +
                                   "\" but this GPU is \"" + s.facts->device.name +
                                   "\"; --resume continues a profile on the GPU it was "
                                   "measured on: choose another --output for this one");
  }
  Profile profile = *old;
  if (o.retry_failed) profile.failures.clear();
  return s.writer.Open(o.output_path, profile);
}

int64_t GroupRanks(const RunState& s, ProbeGroup group) {
  return MembershipOf(group, s.launcher->Hosts(), s.launcher->Rank()).ranks;
}

// One byte per point: 1 when the profile already holds it. Computed by rank 0, sent to all.
Result<std::vector<unsigned char>> RecordedPoints(RunState& s) {
  std::vector<unsigned char> skip(s.points->size(), 0);
  if (s.IsRoot()) {
    const std::vector<std::string> keys = RecordedPointKeys(s.writer.profile());
    const std::set<std::string> recorded(keys.begin(), keys.end());
    auto ranks = [&s](ProbeGroup g) { return GroupRanks(s, g); };
    for (size_t i = 0; i < skip.size(); ++i)
      skip[i] = recorded.count(PointKey((*s.points)[i], ranks)) ? 1 : 0;
  }
  LOOM_RETURN_IF_ERROR(s.launcher->Broadcast(skip.data(), static_cast<int64_t>(skip.size()), 0));
  return skip;
}

std::string Milliseconds(double us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g ms", us / 1000);
  return text;
}

void Report(RunState& s, const std::string& key, const std::string& result, bool failed) {
  if (!s.IsRoot() || !*s.progress) return;
  ProbeProgress p;
  p.index = s.summary.measured + s.summary.failed;
  p.total = s.total;
  p.point = key;
  p.result = result;
  p.failed = failed;
  (*s.progress)(p);
}

Status RecordFailure(RunState& s, const std::string& key, const std::string& error) {
  ++s.summary.failed;
  Report(s, key, error, true);
  return s.IsRoot() ? s.writer.Append(ProbeFailure{key, error}) : Status::Ok();
}

Result<std::vector<double>> TimeKernelPoint(KernelBench& bench, const ProbePoint& point,
                                            const BenchSettings& settings) {
  if (const GemmShape* g = std::get_if<GemmShape>(&point)) return bench.TimeGemm(*g, settings);
  if (const AttentionShape* a = std::get_if<AttentionShape>(&point))
    return bench.TimeAttention(*a, settings);
  if (const MemoryPoint* m = std::get_if<MemoryPoint>(&point))
    return bench.TimeMemory(m->kernel, m->bytes, settings);
  const HostPoint& h = std::get<HostPoint>(point);
  return bench.TimeHost(h.measure, h.bytes, settings);
}

Status AppendKernelSample(RunState& s, const ProbePoint& point, const TimeSummary& t) {
  if (const HostPoint* h = std::get_if<HostPoint>(&point)) {
    return s.writer.Append(
        HostSample{h->measure, h->bytes, t.median_us, t.p10_us, t.p90_us, t.repeats, ""});
  }
  ProfileSample sample;
  if (const GemmShape* g = std::get_if<GemmShape>(&point)) sample.shape = *g;
  if (const AttentionShape* a = std::get_if<AttentionShape>(&point)) sample.shape = *a;
  if (const MemoryPoint* m = std::get_if<MemoryPoint>(&point))
    sample.shape = MemoryKernelTraffic(m->kernel, m->bytes);
  sample.median_us = t.median_us;
  sample.p10_us = t.p10_us;
  sample.p90_us = t.p90_us;
  sample.repeats = t.repeats;
  sample.label = SampleLabel(point);
  return s.writer.Append(sample);
}

// Rank 0 alone.
Status MeasureKernelPoint(RunState& s, const ProbePoint& point, const std::string& key) {
  if (s.kernels == nullptr) return RecordFailure(s, key, "no GPU bench on rank 0");
  Result<std::vector<double>> times = TimeKernelPoint(*s.kernels, point, s.options->settings);
  Result<TimeSummary> summary =
      times.ok() ? Summarize(*times) : Result<TimeSummary>(times.status());
  if (!summary.ok()) return RecordFailure(s, key, summary.status().ToString());
  ++s.summary.measured;
  Report(s, key, Milliseconds(summary->median_us), false);
  return AppendKernelSample(s, point, *summary);
}

// The median of |times|; 0 when there are none (or a broken timer), which the caller refuses.
double MedianOrZero(const std::vector<double>& times) {
  Result<TimeSummary> t = Summarize(times);
  return t.ok() ? t->median_us : 0.0;
}

// Every rank: times the point, agrees on the outcome, and rank 0 records it.
Status MeasureCollectivePoint(RunState& s, const CollectivePoint& point, const std::string& key) {
  Result<CollectiveTimes> times =
      s.collectives == nullptr
          ? Result<CollectiveTimes>(Status::Unavailable("no NCCL bench on this rank"))
          : s.collectives->Time(point, s.options->settings, s.options->collective_timeout_s);
  const double mine = times.ok()                                                 ? kOk
                      : times.status().code() == Status::Code::kDeadlineExceeded ? kHung
                                                                                 : kFailed;
  LOOM_ASSIGN_OR_RETURN(double worst, s.launcher->MaxOverRanks(mine));
  if (worst != kOk) {
    if (worst == kHung) s.dead_groups.insert(point.group);
    const std::string error = times.ok() ? "failed on another rank (see that rank's error output)"
                                         : times.status().ToString();
    if (worst == kHung) s.summary.hangs.push_back(error);
    return RecordFailure(s, key, error);
  }
  LOOM_ASSIGN_OR_RETURN(double out_of_place,
                        s.launcher->MaxOverRanks(MedianOrZero(times->out_of_place_us)));
  LOOM_ASSIGN_OR_RETURN(double in_place,
                        s.launcher->MaxOverRanks(MedianOrZero(times->in_place_us)));
  if (out_of_place <= 0 || in_place <= 0)
    return RecordFailure(s, key, "a rank returned no timed repeats");
  const GroupMembership m = MembershipOf(point.group, s.launcher->Hosts(), s.launcher->Rank());
  CollectiveSample sample;
  sample.collective = point.collective;
  sample.group = point.group;
  sample.ranks = m.ranks;
  sample.nodes = m.nodes;
  sample.size_bytes = point.size_bytes;
  sample.count = CollectiveCount(point.size_bytes);
  sample.redop = CollectiveRedop(point.collective);
  sample.out_of_place =
      CollectiveTimingOf(point.collective, point.size_bytes, m.ranks, out_of_place);
  sample.in_place = CollectiveTimingOf(point.collective, point.size_bytes, m.ranks, in_place);
  sample.repeats = static_cast<int64_t>(times->in_place_us.size());
  ++s.summary.measured;
  Report(s, key, Milliseconds(sample.in_place.time_us), false);
  return s.IsRoot() ? s.writer.Append(sample) : Status::Ok();
}

Status MeasureAll(RunState& s, const std::vector<unsigned char>& skip) {
  auto ranks = [&s](ProbeGroup g) { return GroupRanks(s, g); };
  bool barrier_done = false;
  for (size_t i = 0; i < s.points->size(); ++i) {
    if (skip[i]) continue;
    const ProbePoint& point = (*s.points)[i];
    const std::string key = PointKey(point, ranks);
    if (const CollectivePoint* c = std::get_if<CollectivePoint>(&point)) {
      if (!barrier_done) {
        LOOM_RETURN_IF_ERROR(
            s.launcher->Barrier());  // the other ranks wait out rank 0's kernels here
        barrier_done = true;
      }
      if (s.dead_groups.count(c->group)) {
        ++s.summary.abandoned;
        continue;
      }
      LOOM_RETURN_IF_ERROR(MeasureCollectivePoint(s, *c, key));
    } else if (s.IsRoot()) {
      LOOM_RETURN_IF_ERROR(MeasureKernelPoint(s, point, key));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ProbeSummary> RunProbe(const std::vector<ProbePoint>& points, const DeviceFacts& facts,
                              Launcher& launcher, KernelBench* kernels,
                              CollectiveBench* collectives, const ProbeRunOptions& options,
                              const std::function<void(const ProbeProgress&)>& progress) {
  RunState s;
  s.points = &points;
  s.facts = &facts;
  s.launcher = &launcher;
  s.kernels = kernels;
  s.collectives = collectives;
  s.options = &options;
  s.progress = &progress;
  Status opened = s.IsRoot() ? OpenProfile(s) : Status::Ok();
  LOOM_ASSIGN_OR_RETURN(double open_failed, launcher.MaxOverRanks(opened.ok() ? 0 : 1));
  if (!opened.ok()) return opened;
  if (open_failed > 0)
    return Status::InvalidArgument("rank 0 could not open the profile; see its error");
  LOOM_ASSIGN_OR_RETURN(std::vector<unsigned char> skip, RecordedPoints(s));
  s.summary.planned = static_cast<int64_t>(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    if (skip[i]) {
      ++s.summary.resumed;
    } else if (std::holds_alternative<CollectivePoint>(points[i]) || s.IsRoot()) {
      ++s.total;
    }
  }
  LOOM_RETURN_IF_ERROR(MeasureAll(s, skip));
  s.summary.profile =
      s.IsRoot() ? s.writer.profile() : Header(facts, launcher.Hosts(), options.date);
  return s.summary;
}

}  // namespace loom
