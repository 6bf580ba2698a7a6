// CSV data source: plain or gzip-compressed (detected by the gzip magic
// bytes, RFC 1952), one sample per row, numeric cells, one integer label
// column. Reads scikit-learn's digits, wine and breast-cancer files.
//
//   CsvOptions o{"~/.cache/lockstep/data/digits.csv.gz", /*skip_rows=*/0,
//                /*label_column=*/-1, /*scale=*/1.0 / 16};
//   CsvTable t = read_csv(o);   // t.rows x t.features floats, t.labels
//
// Feature scaling is defined here and nowhere else:
//   feature = float(double(cell) * scale)      (cell parsed with from_chars,
//                                               locale-independent)
// Errors (exit 2) name the file and the 1-based line: a row with the wrong
// number of columns, a non-numeric cell, a non-integer or negative label,
// an empty file, a missing file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep {

/// How to read one CSV file.
struct CsvOptions {
  std::string path;
  int skip_rows = 0;       ///< header lines to skip (scikit-learn's wine/breast cancer: 1)
  int label_column = -1;   ///< 0-based; negative counts from the end (-1 = last)
  double scale = 1.0;      ///< multiplies every feature before rounding to float32
};

/// A numeric table: features row-major, one label per row.
struct CsvTable {
  int64_t rows = 0;
  int64_t features = 0;
  std::vector<float> values;    ///< rows * features, row-major
  std::vector<int64_t> labels;  ///< rows, each >= 0
  int64_t num_classes = 0;      ///< max label + 1
  uint64_t bytes = 0;           ///< size of the file as stored
  std::string file_xxh3;        ///< XXH3-128 of the file as stored
};

/// Reads and validates a CSV file. Throws exit-2 Error as described above.
CsvTable read_csv(const CsvOptions& options);

}  // namespace lockstep
