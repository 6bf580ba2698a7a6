// Peak memory of reading a 100 MB CSV (plain and gzip) with the smoke's CSV
// source: the goal is a peak RSS under 4x the data's decoded size. Prints
// the resident set before the read, the peak after it, and the ratio.
//
//   build/bench/csv_read_rss [MB]    (default 100)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "data/csv_source.h"

namespace {

long rss_kb() {  // current resident set, from /proc/self/statm
  std::ifstream in("/proc/self/statm");
  long size = 0, resident = 0;
  in >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

long peak_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  const long mb = argc > 1 ? std::atol(argv[1]) : 100;
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("lockstep-csv-rss-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string plain = (dir / "big.csv").string(), gz = (dir / "big.csv.gz").string();
  {
    // 13 features with 3-4 significant digits and a label, like wine.
    std::ofstream out(plain);
    gzFile z = gzopen(gz.c_str(), "wb6");
    std::string row;
    long written = 0;
    for (long i = 0; written < mb * 1000000; ++i) {
      row.clear();
      for (int c = 0; c < 13; ++c) row += std::to_string((i * 7919 + c * 104729) % 10000 / 100.0).substr(0, 6) + ",";
      row += std::to_string(i % 3) + "\n";
      out << row;
      gzwrite(z, row.data(), static_cast<unsigned>(row.size()));
      written += static_cast<long>(row.size());
    }
    gzclose(z);
  }
  long decoded_kb = static_cast<long>(fs::file_size(plain) / 1024);
  for (const std::string& path : {plain, gz}) {
    // Each read in a fresh child, so one peak does not hide the other.
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      long before = rss_kb();
      lockstep::CsvOptions o{path, 0, -1, 0.01};
      lockstep::CsvTable t = lockstep::read_csv(o);
      long peak = peak_kb();
      std::printf("%-8s %ld rows, %ld MB decoded (%s %ld MB): RSS before %ld MB, peak %ld MB = %.2fx decoded "
                  "(goal < 4x); growth %.2fx\n",
                  path == gz ? "gzip" : "plain", static_cast<long>(t.rows), decoded_kb / 1024,
                  path == gz ? "stored" : "file", static_cast<long>(fs::file_size(path) / (1024 * 1024)),
                  before / 1024, peak / 1024, static_cast<double>(peak) / decoded_kb,
                  static_cast<double>(peak - before) / decoded_kb);
      std::fflush(stdout);
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
  }
  fs::remove_all(dir);
  return 0;
}
