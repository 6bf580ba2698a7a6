// TensorBoard ingest speed: read_metrics over a folder of N steps x T tags
// written as torch.utils.tensorboard's add_scalar writes them (one Event
// with one simple_value per call), against libprotobuf parsing the same
// records alone (no CRC, no series), and then compared (compare_records,
// cross-stack lane). Goal (issue): 1,000,000 steps x 8 tags read and
// compared within 2 s on 2 cores, at >= 0.5 of protobuf's own parse rate.
//
//   tensorboard_read generate DIR [steps=1000000] [tags=8]
//   tensorboard_read time DIR [tags=8] [repeats=3]
//   bench/tensorboard_read.sh        # both, in a temporary folder
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "compare/compare.h"
#include "core/error.h"
#include "ingest/metrics.h"
#include "ingest/tensorboard.h"
#include "ingest/tensorboard.pb.h"
#include "ingest/tfrecord.h"

namespace {

using Clock = std::chrono::steady_clock;

// CPU seconds of the whole process (every thread): on a shared machine
// this moves less than the wall clock.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string tag_name(int t) {
  static const char* names[] = {"train/loss", "train/grad_norm", "train/param_norm", "train/lr",
                                "train/loss_scale", "train/accuracy", "train/tokens_per_s", "train/weight_decay"};
  return t < 8 ? names[t] : "train/metric" + std::to_string(t);
}

int generate(const std::string& dir, long steps, int tags) {
  std::string path = dir + "/events.out.tfevents.1700000000.bench-host.1234.0";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::string buf;
  lockstep::tb::Event e;
  e.set_wall_time(1700000000.0);
  e.set_file_version("brain.Event:2");
  lockstep::append_tfrecord(buf, e.SerializeAsString());
  uint32_t x = 12345;
  for (long step = 0; step < steps; ++step) {
    for (int t = 0; t < tags; ++t) {
      x = x * 1664525u + 1013904223u;  // a cheap deterministic jitter
      lockstep::tb::Event ev;
      ev.set_wall_time(1700000000.0 + 0.01 * static_cast<double>(step));
      ev.set_step(step);
      auto* v = ev.mutable_summary()->add_value();
      v->set_tag(tag_name(t));
      v->set_simple_value(static_cast<float>((t + 1) * (1.0 + 1.0 / (1.0 + static_cast<double>(step))) +
                                             1e-3 * (x >> 8) / 16777216.0));
      lockstep::append_tfrecord(buf, ev.SerializeAsString());
    }
    if (buf.size() > (64u << 20)) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  }
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  std::printf("wrote %s\n", path.c_str());
  return 0;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int time_all(const std::string& dir, int tags, int repeats) {
  lockstep::MetricsSpec spec;
  spec.format = lockstep::MetricsFormat::kTensorBoard;
  spec.path = dir;
  for (int t = 0; t < tags; ++t) spec.series["metric" + std::to_string(t)] = tag_name(t);

  // read_metrics: CRCs, parsing, series building, merge and grid checks.
  double best_read = 1e30, best_read_cpu = 1e30;
  std::map<std::string, lockstep::Series> series;
  for (int r = 0; r < repeats; ++r) {
    series.clear();
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    series = lockstep::read_metrics(spec);
    best_read = std::min(best_read, seconds_since(t0));
    best_read_cpu = std::min(best_read_cpu, cpu_seconds() - c0);
  }
  size_t values = 0;
  for (const auto& [name, s] : series) values += s.values.size();

  // The same records in memory, parsed by libprotobuf alone.
  std::vector<char> data;
  std::vector<size_t> ends;
  uint64_t file_bytes = 0;
  for (const std::string& file : lockstep::tensorboard_event_files(dir)) {
    lockstep::TfRecordReader reader(file);
    file_bytes += reader.size();
    lockstep::TfRecord rec;
    while (reader.next(rec)) {
      data.insert(data.end(), rec.data, rec.data + rec.size);
      ends.push_back(data.size());
    }
  }
  double best_proto = 1e30, best_proto_cpu = 1e30;
  int64_t sink = 0;
  for (int r = 0; r < repeats; ++r) {
    lockstep::tb::Event ev;
    auto t0 = Clock::now();
    double c0 = cpu_seconds();
    size_t begin = 0;
    for (size_t end : ends) {
      if (!ev.ParseFromArray(data.data() + begin, static_cast<int>(end - begin))) std::abort();
      sink += ev.step();
      begin = end;
    }
    best_proto = std::min(best_proto, seconds_since(t0));
    best_proto_cpu = std::min(best_proto_cpu, cpu_seconds() - c0);
  }

  // Comparing what was read: two records holding the series, cross-stack.
  lockstep::RunRecord run, golden;
  for (lockstep::RunRecord* r : {&run, &golden}) {
    r->smoke = "bench";
    r->seed = 1;
    r->steps = static_cast<int64_t>(series.begin()->second.values.size());
    r->series = series;
  }
  run.fingerprint = {{"torch.version", {"2.11.0", true}}};
  golden.fingerprint = {{"torch.version", {"1.13.0", true}}};
  lockstep::TolerancePolicy policy;
  double best_compare = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = Clock::now();
    lockstep::Verdict v = lockstep::compare_records(run, golden, policy);
    best_compare = std::min(best_compare, seconds_since(t0));
    if (!v.passed()) std::fprintf(stderr, "unexpected: the comparison failed\n");
  }

  std::printf("events:                 %zu records, %.1f MiB in %s\n", ends.size(),
              static_cast<double>(file_bytes) / (1 << 20), dir.c_str());
  std::printf("values read:            %zu (%zu series); %u hardware threads, read_metrics parses on up to 4\n",
              values, series.size(), std::thread::hardware_concurrency());
  std::printf("read_metrics:           %.3f s wall, %.3f s CPU (all threads)  (%.1f M events/s wall)\n", best_read,
              best_read_cpu, ends.size() / best_read / 1e6);
  std::printf("protobuf parse only:    %.3f s wall, %.3f s CPU (one thread)   (%.1f M events/s)   [sink %lld]\n",
              best_proto, best_proto_cpu, ends.size() / best_proto / 1e6, static_cast<long long>(sink % 7));
  std::printf("ratio read/protobuf:    %.2f of protobuf's rate (wall), %.2f (CPU)   (goal >= 0.5)\n",
              best_proto / best_read, best_proto_cpu / best_read_cpu);
  std::printf("compare_records:        %.3f s\n", best_compare);
  std::printf("read + compare:         %.3f s   (goal <= 2 s on 2 cores)\n", best_read + best_compare);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "generate" && argc >= 3)
      return generate(argv[2], argc > 3 ? std::atol(argv[3]) : 1000000, argc > 4 ? std::atoi(argv[4]) : 8);
    if (mode == "time" && argc >= 3)
      return time_all(argv[2], argc > 3 ? std::atoi(argv[3]) : 8, argc > 4 ? std::atoi(argv[4]) : 3);
    std::fprintf(stderr, "usage: tensorboard_read generate DIR [steps] [tags] | time DIR [tags] [repeats]\n");
    return 2;
  } catch (const lockstep::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return lockstep::to_int(e.code());
  }
}
