// Helpers for the ingest tests: a temporary folder, text files, the exit-2
// message of a call, and TensorBoard event files built with the generated
// protobuf classes and lockstep's own TFRecord framing.
//
//   IngestTempDir dir("tb");
//   TbFile f;
//   f.version().scalar(0, "train/loss", 2.5f);
//   f.write(dir.path("events.out.tfevents.1"));
//   std::string msg = exit2_message([&] { read_metrics(spec); });
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.h"
#include "ingest/tensorboard.pb.h"
#include "ingest/tfrecord.h"

namespace lockstep {

/// A fresh folder under the system temp dir, removed at the end of the test.
class IngestTempDir {
 public:
  explicit IngestTempDir(const std::string& name) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("lockstep-ingest-" + name + "-" + (info ? std::string(info->name()) : "x") + "-" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~IngestTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string& name = "") const { return name.empty() ? dir_.string() : (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

/// Writes `bytes` to `path`.
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// The message of the exit-2 lockstep::Error `f` throws; fails the test
/// (and returns "") when it throws nothing or another code.
inline std::string exit2_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

/// An event file being built, record by record.
class TbFile {
 public:
  /// The first event of every file: file_version "brain.Event:2".
  TbFile& version() {
    tb::Event e;
    e.set_wall_time(1700000000.0);
    e.set_file_version("brain.Event:2");
    return event(e);
  }
  /// A scalar as torch.utils.tensorboard's add_scalar writes it.
  TbFile& scalar(int64_t step, const std::string& tag, float value) {
    tb::Event e = summary_event(step);
    auto* v = e.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(value);
    return event(e);
  }
  /// A rank-0 DT_FLOAT tensor, in float_val or in tensor_content.
  TbFile& tensor_float(int64_t step, const std::string& tag, float value, bool content) {
    tb::Event e = summary_event(step);
    auto* t = tensor_value(e, tag);
    t->set_dtype(tb::DT_FLOAT);
    if (content) t->set_tensor_content(le_bytes(&value, 4));
    else t->add_float_val(value);
    return event(e);
  }
  /// A DT_DOUBLE tensor of shape [1, 1] (or rank 0), in double_val or tensor_content.
  TbFile& tensor_double(int64_t step, const std::string& tag, double value, bool content, bool shape11 = false) {
    tb::Event e = summary_event(step);
    auto* t = tensor_value(e, tag);
    t->set_dtype(tb::DT_DOUBLE);
    if (shape11) {
      t->mutable_tensor_shape()->add_dim()->set_size(1);
      t->mutable_tensor_shape()->add_dim()->set_size(1);
    }
    if (content) t->set_tensor_content(le_bytes(&value, 8));
    else t->add_double_val(value);
    return event(e);
  }
  /// Any event, framed.
  TbFile& event(const tb::Event& e) {
    offsets_.push_back(bytes_.size());
    append_tfrecord(bytes_, e.SerializeAsString());
    return *this;
  }
  /// Raw bytes appended as they are (corruption, truncation).
  TbFile& raw(const std::string& bytes) {
    bytes_ += bytes;
    return *this;
  }
  /// Byte offset of record `i` (0-based, in the order added).
  uint64_t offset(size_t i) const { return offsets_.at(i); }
  std::string& bytes() { return bytes_; }
  void write(const std::string& path) const { write_bytes(path, bytes_); }

  static tb::Event summary_event(int64_t step) {
    tb::Event e;
    e.set_wall_time(1700000000.5 + static_cast<double>(step));
    e.set_step(step);
    e.mutable_summary();
    return e;
  }

 private:
  static tb::TensorProto* tensor_value(tb::Event& e, const std::string& tag) {
    auto* v = e.mutable_summary()->add_value();
    v->set_tag(tag);
    return v->mutable_tensor();
  }
  static std::string le_bytes(const void* p, size_t n) {
    std::string s(n, '\0');
    std::memcpy(s.data(), p, n);  // the test machines are little-endian
    return s;
  }

  std::string bytes_;
  std::vector<uint64_t> offsets_;
};

}  // namespace lockstep
