// The C++ side of the Python parity test (tests/python/test_probe_parity.py):
// reads batches from stdin and prints lockstep's BatchProbe JSON for each,
// computed by lockstep_tensor_stats exactly as data/probe.cpp does, but
// without LibTorch.
//
// Input (binary, stdin): any number of cases, each
//   a header line:  "case <batch> <n_indices>\n"
//   n_indices int64 little-endian dataset indices,
//   then two tensors (inputs, labels), each
//     a header line: "<dtype> <ndim> <dim0> ... <dim(ndim-1)> <nbytes>\n"
//     nbytes raw C-contiguous little-endian bytes.
// Output (stdout): one line per case, to_json(BatchProbe).dump().
// Exit 0 on success, 2 with a message on malformed input.
//
// float32, float64 and int64 go through accumulate_stats for their type (the
// bytes hashed by the statistics pass, as probe_tensor does); every other
// dtype is hashed as raw bytes and converted element-wise to float64 first,
// as probe_tensor's t.to(torch::kFloat64) does. Those conversions are exact
// (uint8/int8/int16/int32/bool are integers below 2^31; float16 and bfloat16
// widen exactly), so the hand-written ones below give LibTorch's bits.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/hash.h"
#include "data/tensor_stats.h"
#include "record/batch_probe.h"

namespace {

using lockstep::TensorStats;

std::string read_line(std::istream& in) {
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error("unexpected end of input");
  return line;
}

std::vector<char> read_bytes(std::istream& in, size_t n) {
  std::vector<char> out(n);
  if (n && !in.read(out.data(), static_cast<std::streamsize>(n)))
    throw std::runtime_error("short read: wanted " + std::to_string(n) + " bytes");
  return out;
}

double half_to_double(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0x1f) v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (exp == 0) v = std::ldexp(static_cast<double>(mant), -24);
  else v = std::ldexp(static_cast<double>(mant | 0x400), exp - 25);
  return sign ? -v : v;
}

double bfloat16_to_double(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return static_cast<double>(f);
}

template <typename T>
std::vector<T> as(const std::vector<char>& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

template <typename T>
std::vector<double> widen(const std::vector<char>& bytes) {
  std::vector<double> out;
  for (T x : as<T>(bytes)) out.push_back(static_cast<double>(x));
  return out;
}

size_t element_size(const std::string& dtype) {
  if (dtype == "float64" || dtype == "int64") return 8;
  if (dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "float16" || dtype == "bfloat16" || dtype == "int16") return 2;
  if (dtype == "int8" || dtype == "uint8" || dtype == "bool") return 1;
  throw std::runtime_error("unknown dtype " + dtype);
}

TensorStats read_tensor(std::istream& in) {
  std::istringstream header(read_line(in));
  TensorStats s;
  size_t ndim = 0, nbytes = 0;
  if (!(header >> s.dtype >> ndim)) throw std::runtime_error("bad tensor header");
  size_t n = 1;
  for (size_t i = 0; i < ndim; ++i) {
    int64_t d;
    if (!(header >> d) || d < 0) throw std::runtime_error("bad dimension");
    s.shape.push_back(d);
    n *= static_cast<size_t>(d);
  }
  if (!(header >> nbytes)) throw std::runtime_error("bad byte count");
  if (nbytes != n * element_size(s.dtype))
    throw std::runtime_error("byte count " + std::to_string(nbytes) + " does not match shape and dtype " + s.dtype);
  std::vector<char> bytes = read_bytes(in, nbytes);

  lockstep::Xxh3Stream hash;
  if (s.dtype == "float32") {
    std::vector<float> v = as<float>(bytes);
    lockstep::accumulate_stats(v.data(), v.size(), s, &hash);
  } else if (s.dtype == "int64") {
    std::vector<int64_t> v = as<int64_t>(bytes);
    lockstep::accumulate_stats(v.data(), v.size(), s, &hash);
  } else {
    hash.update(bytes.data(), bytes.size());
    std::vector<double> d;
    if (s.dtype == "float64") d = as<double>(bytes);
    else if (s.dtype == "int32") d = widen<int32_t>(bytes);
    else if (s.dtype == "int16") d = widen<int16_t>(bytes);
    else if (s.dtype == "int8") d = widen<int8_t>(bytes);
    else if (s.dtype == "uint8") d = widen<uint8_t>(bytes);
    else if (s.dtype == "bool") d = widen<uint8_t>(bytes);  // torch bools are 0/1 bytes
    else if (s.dtype == "float16") for (uint16_t h : as<uint16_t>(bytes)) d.push_back(half_to_double(h));
    else if (s.dtype == "bfloat16") for (uint16_t b : as<uint16_t>(bytes)) d.push_back(bfloat16_to_double(b));
    lockstep::accumulate_stats(d.data(), d.size(), s);
  }
  s.xxh3_128 = hash.hex();
  return s;
}

}  // namespace

int main() {
  std::ios::sync_with_stdio(false);
  std::istream& in = std::cin;
  try {
    while (in.peek() != std::char_traits<char>::eof()) {
      std::istringstream header(read_line(in));
      std::string word;
      lockstep::BatchProbe p;
      size_t n_indices = 0;
      if (!(header >> word >> p.batch >> n_indices) || word != "case") throw std::runtime_error("bad case header");
      std::vector<int64_t> indices = as<int64_t>(read_bytes(in, n_indices * sizeof(int64_t)));
      p.sample_index_hash = lockstep::hex64(lockstep::xxh3_64(indices.data(), indices.size() * sizeof(int64_t)));
      p.inputs = read_tensor(in);
      p.labels = read_tensor(in);
      std::cout << lockstep::to_json(p).dump() << '\n';
    }
  } catch (const std::exception& e) {
    std::cerr << "tensor_stats_tool: " << e.what() << '\n';
    return 2;
  }
  return 0;
}
