#include "data/image_folder.h"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// ".png" for "a/B.PNG": the extension, lower-cased.
std::string lower_extension(const std::string& name) {
  std::string ext = fs::path(name).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool is_jpeg_name(const std::string& name) {
  std::string ext = lower_extension(name);
  return ext == ".jpg" || ext == ".jpeg";
}

bool is_image_name(const std::string& name) {
  if (name.empty() || name[0] == '.') return false;
  std::string ext = lower_extension(name);
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".tif" || ext == ".tiff" || ext == ".bmp";
}

int interpolation_flag(const std::string& name) {
  static const std::map<std::string, int> flags = {
      {"nearest", cv::INTER_NEAREST}, {"nearest_exact", cv::INTER_NEAREST_EXACT},
      {"linear", cv::INTER_LINEAR},   {"linear_exact", cv::INTER_LINEAR_EXACT},
      {"area", cv::INTER_AREA},       {"cubic", cv::INTER_CUBIC}};
  auto it = flags.find(name);
  if (it == flags.end()) throw BadUsage("unknown interpolation '" + name + "'");
  return it->second;
}

// JPEG and PNG decoders accept truncated files (libjpeg fills the rest with
// grey), so the end marker is checked first.
void check_complete(const std::string& path, const std::string& bytes) {
  std::string ext = lower_extension(path);
  auto tail_has = [&](const std::string& marker, size_t window) {
    size_t from = bytes.size() > window ? bytes.size() - window : 0;
    return bytes.find(marker, from) != std::string::npos;
  };
  if (is_jpeg_name(path) && !tail_has(std::string("\xff\xd9", 2), 64))
    throw BadInput(path, "(image)", "a complete JPEG ending with the EOI marker FF D9 (the file is truncated)");
  if (ext == ".png" && !tail_has("IEND", 16))
    throw BadInput(path, "(image)", "a complete PNG ending with an IEND chunk (the file is truncated, or has bytes after its end)");
}

// Colour policy (header comment): to `channels` channels, RGB order.
cv::Mat to_channels(const cv::Mat& img, int channels, const std::string& path) {
  cv::Mat out;
  int have = img.channels();
  if (have != 1 && have != 3 && have != 4)
    throw BadInput(path, "(image)", "1, 3 or 4 channels, got " + std::to_string(have));
  if (channels == 1) {
    if (have == 1) out = img;
    else cv::cvtColor(img, out, have == 3 ? cv::COLOR_BGR2GRAY : cv::COLOR_BGRA2GRAY);
  } else {
    cv::cvtColor(img, out, have == 1 ? cv::COLOR_GRAY2RGB : have == 3 ? cv::COLOR_BGR2RGB : cv::COLOR_BGRA2RGB);
  }
  return out;
}

// The width and height a PNG (IHDR), JPEG (the first SOFn), BMP
// (BITMAPINFOHEADER or OS/2's BITMAPCOREHEADER) or TIFF (the first IFD's
// ImageWidth and ImageLength) header declares; {0, 0} when not found (a
// header too short or malformed: the decoder then says what is wrong).
std::pair<uint64_t, uint64_t> declared_size(const std::string& path, const std::string& bytes) {
  auto u8 = [&](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])); };
  auto be16 = [&](size_t i) { return u8(i) << 8 | u8(i + 1); };
  auto be32 = [&](size_t i) { return be16(i) << 16 | be16(i + 2); };
  auto le16 = [&](size_t i) { return u8(i) | u8(i + 1) << 8; };
  auto le32 = [&](size_t i) { return le16(i) | le16(i + 2) << 16; };
  std::string ext = lower_extension(path);
  if (ext == ".png" && bytes.size() >= 24 && bytes.compare(12, 4, "IHDR") == 0) return {be32(16), be32(20)};
  if (ext == ".bmp" && bytes.size() >= 26 && bytes.compare(0, 2, "BM") == 0) {
    if (le32(14) == 12) return {le16(18), le16(20)};  // OS/2 BITMAPCOREHEADER: 16-bit sizes
    uint64_t w = le32(18), h = le32(22);
    if (h & 0x80000000u) h = (~h + 1) & 0xffffffffu;  // a negative height: top-down rows
    if (w & 0x80000000u) w = (~w + 1) & 0xffffffffu;
    return {w, h};
  }
  if (is_jpeg_name(path)) {
    for (size_t i = 2; i + 1 < bytes.size();) {  // after SOI, marker segments FF xx <len16>
      if (u8(i) != 0xff) break;
      while (i + 1 < bytes.size() && u8(i + 1) == 0xff) ++i;  // fill bytes before a marker
      if (i + 9 >= bytes.size()) break;
      uint64_t marker = u8(i + 1);
      if (marker == 0xd8 || marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7)) { i += 2; continue; }
      bool sof = marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
      if (sof) return {be16(i + 7), be16(i + 5)};
      i += 2 + be16(i + 2);
    }
  }
  if ((ext == ".tif" || ext == ".tiff") && bytes.size() >= 8 &&
      (bytes.compare(0, 4, std::string("II*\0", 4)) == 0 || bytes.compare(0, 4, std::string("MM\0*", 4)) == 0)) {
    const bool le = bytes[0] == 'I';
    auto r16 = [&](size_t i) { return le ? le16(i) : be16(i); };
    auto r32 = [&](size_t i) { return le ? le32(i) : be32(i); };
    uint64_t ifd = r32(4);
    if (ifd + 2 > bytes.size()) return {0, 0};
    uint64_t n = r16(ifd), w = 0, h = 0;
    for (uint64_t k = 0; k < n && ifd + 2 + 12 * (k + 1) <= bytes.size(); ++k) {
      size_t e = ifd + 2 + 12 * k;
      uint64_t tag = r16(e), type = r16(e + 2);
      uint64_t value = type == 3 ? r16(e + 8) : type == 4 ? r32(e + 8) : 0;  // SHORT or LONG, in the entry
      if (tag == 256) w = value;
      if (tag == 257) h = value;
    }
    return {w, h};
  }
  return {0, 0};
}

// One image -> C*H*W floats at `dst`.
void decode_into(const std::string& path, const std::string& bytes, const ImageFolderOptions& o, float* dst) {
  check_complete(path, bytes);
  // Decoding costs up to 8 bytes a pixel (16-bit RGBA) whatever the file's
  // size: a 0.9 MB PNG may declare 30000 x 30000. Refused from its header.
  // Every accepted format has its size read there.
  if (auto [w, h] = declared_size(path, bytes);
      w > kMaxImagePixels || h > kMaxImagePixels || w * h > kMaxImagePixels)  // each below 2^32: no overflow
    throw BadInput(path, "(image)", "at most " + std::to_string(kMaxImagePixels) + " pixels (8192 x 8192), got " +
                                        std::to_string(w) + " x " + std::to_string(h) +
                                        " declared in its header (decoding it would take up to " +
                                        std::to_string(static_cast<uint64_t>(static_cast<double>(w) * h * 8 / 1048576)) +
                                        " MiB)");
  cv::Mat raw;
  try {
    raw = cv::imdecode(cv::Mat(1, static_cast<int>(bytes.size()), CV_8U, const_cast<char*>(bytes.data())),
                       cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception& e) {  // e.g. a header declaring more than CV_IO_MAX_IMAGE_PIXELS
    throw BadInput(path, "(image)", "an image OpenCV can decode (" + std::string(e.err) + ")");
  }
  if (raw.empty()) throw BadInput(path, "(image)", "an image OpenCV can decode (corrupt or unsupported format)");
  if (raw.depth() != CV_8U && raw.depth() != CV_16U)
    throw BadInput(path, "(image)", "8- or 16-bit samples (float and 32-bit images are not supported)");
  const int c = static_cast<int>(o.sample_shape[0]);
  const int h = static_cast<int>(o.sample_shape[1]), w = static_cast<int>(o.sample_shape[2]);
  cv::Mat img = to_channels(raw, c, path);
  cv::Mat sized;
  cv::resize(img, sized, cv::Size(w, h), 0, 0, interpolation_flag(o.interpolation));
  // uint -> float, defined here only.
  const float max = raw.depth() == CV_8U ? 255.0f : 65535.0f;
  const float inv = 1.0f / max;
  const bool mul = o.to_float == "mul";
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) {
        float v = raw.depth() == CV_8U ? static_cast<float>(sized.ptr<uint8_t>(y)[x * c + k])
                                       : static_cast<float>(sized.ptr<uint16_t>(y)[x * c + k]);
        dst[(static_cast<size_t>(k) * h + y) * w + x] = mul ? v * inv : v / max;
      }
}

ImageFolder read_image_folder_unchecked(const ImageFolderOptions& o);

// While alive, what the process writes to its stderr (fd 2) goes to a
// temporary file instead: libpng, under OpenCV's decoder, prints its
// warnings there itself ("libpng warning: iCCP: known incorrect sRGB
// profile"), a dozen lines per check of the sample photos. finish() puts
// stderr back and returns what was written. When no temporary file can be
// made, nothing is captured.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    // An unnamed file in $TMPDIR (std::tmpfile ignores it), else /tmp.
    const char* dir = std::getenv("TMPDIR");
    int fd = ::open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && dir && *dir) fd = ::open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return;
    file_ = ::fdopen(fd, "w+");
    if (!file_) {
      ::close(fd);
      return;
    }
    saved_ = ::dup(STDERR_FILENO);
    if (saved_ < 0 || ::dup2(::fileno(file_), STDERR_FILENO) < 0) restore();
    std::clearerr(stderr);  // intact() counts this capture's failed writes only
  }
  ~StderrCapture() { restore(); }
  /// Whether stderr goes to the capture file and every write so far
  /// landed there (a full disk makes the decoder's warnings vanish).
  bool intact() {
    std::fflush(stderr);
    return file_ && saved_ >= 0 && !std::ferror(stderr);
  }
  /// What was written since the last call (at most 64 KiB of it), read
  /// with pread so the shared file offset stderr writes at never moves.
  std::string take_new() {
    std::string out;
    if (!file_ || saved_ < 0) return out;
    std::fflush(stderr);
    struct stat st {};
    if (::fstat(::fileno(file_), &st) != 0 || st.st_size <= taken_) return out;
    out.resize(static_cast<size_t>(std::min<off_t>(st.st_size - taken_, off_t{1} << 16)));
    ssize_t n = ::pread(::fileno(file_), out.data(), out.size(), taken_);
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    taken_ = st.st_size;
    return out;
  }
  std::string finish() {
    std::string out;
    if (!file_ || saved_ < 0) return out;
    std::fflush(stderr);
    restore_fd();
    std::rewind(file_);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0 && out.size() < (1u << 20)) out.append(buf, n);
    restore();
    return out;
  }

 private:
  void restore_fd() {
    if (saved_ >= 0) {
      ::dup2(saved_, STDERR_FILENO);
      ::close(saved_);
      saved_ = -1;
    }
  }
  void restore() {
    restore_fd();
    if (file_) std::fclose(file_);
    file_ = nullptr;
  }
  std::FILE* file_ = nullptr;
  int saved_ = -1;
  off_t taken_ = 0;
};

// libjpeg's warnings that mean pixels are missing: the entropy-coded data
// stopped before the image was whole (a file cut short, its end marker
// added back, still decodes, the rest grey). Others ("N extraneous bytes
// before marker") leave every pixel decoded.
void refuse_incomplete_jpeg(const std::string& path, const std::string& decoder_said) {
  for (const char* warning : {"Corrupt JPEG data: premature end of data segment", "Premature end of JPEG file"})
    if (decoder_said.find(warning) != std::string::npos)
      throw BadInput(path, "(image)", std::string("a complete image; libjpeg says \"") + warning +
                                          "\": the file was cut short, so part of the image is missing");
}

// The decoder's lines as one phrase ("libpng error: IDAT: CRC error;
// ..."), at most 3, those `already_said` quotes left out, after counting
// its warnings into `t`: for the error of the image it failed on.
std::string decoder_said_about(const std::string& text, CsvTable& t, const std::string& already_said) {
  std::string out;
  size_t start = 0, kept = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? text.size() : nl + 1;
    if (line.empty()) continue;
    if (line.rfind("libpng warning:", 0) == 0 || line.rfind("Corrupt JPEG data:", 0) == 0) ++t.decoder_lines;
    if (already_said.find(line) != std::string::npos) continue;  // the error quotes it already
    if (kept++ < 3) out += (out.empty() ? "" : "; ") + (line.size() > 200 ? line.substr(0, 200) + "..." : line);
  }
  if (kept > 3) out += "; and " + std::to_string(kept - 3) + " more lines";
  return out;
}

// Counts the decoder's lines into `t` (each distinct one kept once); any
// line that is not a libpng or libjpeg warning goes back to stderr, said
// to be the decoder's.
void account_decoder_output(const std::string& text, CsvTable& t) {
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? text.size() : nl + 1;
    if (line.empty()) continue;
    bool chatter = line.rfind("libpng warning:", 0) == 0 || line.rfind("Corrupt JPEG data:", 0) == 0;
    if (!chatter) {
      std::fprintf(stderr, "lockstep: the image decoder said: %s\n", printable_message(line, false).c_str());
      continue;
    }
    ++t.decoder_lines;
    if (t.decoder_messages.size() < 10 &&
        std::find(t.decoder_messages.begin(), t.decoder_messages.end(), line) == t.decoder_messages.end())
      t.decoder_messages.push_back(line);
  }
}

}  // namespace

ImageFolder read_image_folder(const ImageFolderOptions& o) {
  try {
    return read_image_folder_unchecked(o);
  } catch (const fs::filesystem_error& e) {  // a symlink loop, a vanished entry
    throw BadInput(e.path1().string(), "(folder)", "a readable folder entry (" + e.code().message() + ")");
  }
}

namespace {

// Why a folder entry is not loaded, for data.skipped_files: an entry at the
// root that is no class folder, or one in a class folder that is no image.
std::string not_loaded_why(const fs::directory_entry& e, bool in_class) {
  std::error_code ec;
  if (e.is_symlink(ec) && !fs::exists(e.path(), ec))
    return ec == std::errc::too_many_symbolic_link_levels
               ? "a symbolic link loop"
               : "a symbolic link to nothing: an unfetched Git LFS or git-annex file?";
  if (e.is_directory(ec)) return "a folder; images are read from the class folders only, not below them";
  if (!e.is_regular_file(ec)) return "not a regular file (a FIFO, socket or device)";
  if (!in_class) return "a file at the root; images are read from the class folders only";
  return "not an image name (.png .jpg .jpeg .tif .tiff .bmp)";
}

// The images of the folder as (path relative to the root, label), sorted
// byte-wise; fills f.classes and f.skipped (every entry not loaded, with
// its reason). Throws exit-2 Error for a folder without classes or images,
// or a class without images.
std::vector<std::pair<std::string, int64_t>> list_image_folder(const ImageFolderOptions& o, ImageFolder& f) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(o.root, ec)) {
    std::string name = e.path().filename().string();
    std::error_code entry_ec;
    if (name[0] == '.') continue;
    if (e.is_directory(entry_ec)) f.classes.push_back(name);
    else f.skipped.push_back(name + " (" + not_loaded_why(e, /*in_class=*/false) + ")");
  }
  std::sort(f.classes.begin(), f.classes.end());  // byte-wise
  if (f.classes.empty()) throw BadInput(o.root, "(folder)", "one subfolder per class (found none)");

  std::vector<std::pair<std::string, int64_t>> files;  // relative path, label
  for (size_t label = 0; label < f.classes.size(); ++label)
    for (const auto& e : fs::directory_iterator(fs::path(o.root) / f.classes[label], ec)) {
      std::string name = e.path().filename().string();
      std::error_code entry_ec;
      if (name[0] == '.') continue;  // dotfiles: never looked at
      if (e.is_regular_file(entry_ec) && is_image_name(name)) {
        files.emplace_back(f.classes[label] + "/" + name, static_cast<int64_t>(label));
      } else if (is_image_name(name)) {
        // An image named in a class whose bytes are not here (an unfetched
        // Git LFS or git-annex file, a folder or FIFO in its place):
        // training on the rest would pass on part of the dataset.
        std::error_code link_ec;
        const bool dangling = e.is_symlink(link_ec) && !fs::exists(e.path(), link_ec);
        throw BadInput(e.path().string(), "(image)",
                       "an image file; this is " + not_loaded_why(e, /*in_class=*/true) +
                           (dangling ? " (fetch it: `git lfs pull`, `git annex get`)" : ""));
      } else
        f.skipped.push_back(f.classes[label] + "/" + name + " (" + not_loaded_why(e, /*in_class=*/true) + ")");
    }
  std::sort(files.begin(), files.end());  // byte-wise on "class/file"
  std::sort(f.skipped.begin(), f.skipped.end());
  if (files.empty()) throw BadInput(o.root, "(folder)", "at least one image (.png .jpg .jpeg .tif .tiff .bmp)");
  // A class without images would still take a label and widen the model's
  // output; torchvision's ImageFolder refuses it too (allow_empty=False).
  std::vector<bool> has_image(f.classes.size(), false);
  for (const auto& file : files) has_image[static_cast<size_t>(file.second)] = true;
  for (size_t label = 0; label < f.classes.size(); ++label)
    if (!has_image[label])
      throw BadInput((fs::path(o.root) / f.classes[label]).string(), "(class folder)",
                     "at least one image (.png .jpg .jpeg .tif .tiff .bmp) in every class folder, found none");

  return files;
}

ImageFolder read_image_folder_unchecked(const ImageFolderOptions& o) {
  std::error_code ec;
  if (!fs::exists(o.root, ec))
    throw BadInput(o.root, "(folder)", "an image folder with one subfolder per class (it does not exist)");
  if (!fs::is_directory(o.root, ec))
    throw BadInput(o.root, "(folder)", "an image folder with one subfolder per class (it is a file)");
  ImageFolder f;
  const std::vector<std::pair<std::string, int64_t>> files = list_image_folder(o, f);

  CsvTable& t = f.table;
  t.rows = static_cast<int64_t>(files.size());
  t.features = o.sample_shape[0] * o.sample_shape[1] * o.sample_shape[2];
  if (t.rows * t.features > (int64_t{1} << 28))
    throw BadInput(o.root, "(folder)", "at most 2^28 decoded values (1 GiB of float32); " + std::to_string(t.rows) +
                                           " images x " + std::to_string(t.features) + " values per sample");
  t.values.assign(static_cast<size_t>(t.rows * t.features), 0.0f);
  t.num_classes = static_cast<int64_t>(f.classes.size());
  Xxh3Stream manifest;
  const int64_t n = t.rows;
  const int64_t every = o.manifest_sample > 0 && o.manifest_sample < n ? n / o.manifest_sample : 1;
  StderrCapture decoder;  // the decoder's own warnings stay off the terminal, counted
  for (int64_t i = 0; i < n; ++i) {
    const auto& [rel, label] = files[static_cast<size_t>(i)];
    std::string path = (fs::path(o.root) / rel).string();
    std::string bytes = read_file(path);
    try {
      decode_into(path, bytes, o, t.values.data() + i * t.features);
      // A cut JPEG shows only in libjpeg's warnings: without them it
      // cannot be told from a whole one.
      if (is_jpeg_name(rel) && !decoder.intact())
        throw EnvironmentError(path + ": cannot tell whether this JPEG is whole: libjpeg's warnings could not be "
                               "caught (no room for a temporary file in $TMPDIR or /tmp?)");
      // Taken after every image, so that what the decoder said about one
      // (libpng's iCCP warnings) is never quoted about a later one.
      const std::string said_now = decoder.take_new();
      if (is_jpeg_name(rel)) refuse_incomplete_jpeg(path, said_now);
    } catch (const Error& e) {
      // What the decoder said about this image before failing goes into
      // lockstep's message, not raw onto the terminal.
      std::string said = decoder_said_about(decoder.take_new(), t, e.what());
      decoder.finish();
      if (said.empty()) throw;
      throw Error(e.code(), std::string(e.what()) + " (the decoder said: " + said + ")");
    } catch (...) {
      account_decoder_output(decoder.finish(), t);
      throw;
    }
    t.labels.push_back(label);
    f.files.push_back(rel);
    uint64_t size = bytes.size();
    manifest.update_string(rel);
    manifest.update(&size, sizeof size);
    if (i % every == 0) {
      manifest.update_string(xxh3_128_hex(bytes.data(), bytes.size()));
      ++f.manifest.content_hashed;
    }
    f.manifest.bytes += size;
  }
  account_decoder_output(decoder.finish(), t);
  f.manifest.files = n;
  f.manifest.xxh3_128 = manifest.hex();
  t.bytes = f.manifest.bytes;
  t.file_xxh3 = f.manifest.xxh3_128;
  t.skipped = f.skipped;
  return f;
}

}  // namespace

}  // namespace lockstep
