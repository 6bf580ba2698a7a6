// Image-folder data source: one subfolder per class, decoded with OpenCV
// into a table of float32 [C, H, W] samples (docs/smoke-config.md, "images").
//
//   ImageFolderOptions o{"/data/photos", {3, 32, 32}, "linear"};
//   ImageFolder f = read_image_folder(o);   // f.table: rows x 3*32*32, f.manifest
//
// Rules, each defined here and nowhere else:
//   listing    classes = subfolders of root, sorted byte-wise (label = rank);
//              files = regular files with an image extension (.png .jpg
//              .jpeg .tif .tiff .bmp, any case), not starting with '.', in
//              byte-wise order of "class/file" — independent of locale,
//              filesystem and directory order
//   decoding   cv::imdecode(IMREAD_UNCHANGED); a JPEG must end with EOI
//              (FF D9) and a PNG with IEND, else it is truncated (libjpeg
//              would otherwise decode a grey-filled partial image)
//   colour     C = 1: grey stays; BGR -> grey with OpenCV's BT.601 weights;
//              BGRA -> grey, alpha dropped.  C = 3: RGB order; grey is
//              replicated; alpha is dropped (no compositing). Palette images
//              arrive expanded to BGR(A) by libpng.
//   depth      8-bit (max 255) or 16-bit (max 65535); anything else is an error
//   resize     to [H, W] with the configured interpolation, on the integer
//              image, before conversion (no implicit default)
//   to float   div: float(v) / float(max)    (the default)
//              mul: float(v) * (1.0f / float(max))
//              (different bits for some v: kept to reproduce pipelines that
//              convert the other way)
//   manifest   file count, total bytes, XXH3-128 over (relative path, size,
//              content XXH3-128) of every file in order; with sample = N
//              only every (count/N)-th file's content is hashed
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/csv_source.h"

namespace lockstep {

/// The most pixels an image may declare (8192 x 8192): PNG, JPEG, BMP and
/// TIFF headers are read before decoding and a larger one is exit 2 naming
/// the file. Decoding takes up to 8 bytes a pixel.
inline constexpr uint64_t kMaxImagePixels = uint64_t{1} << 26;

/// The "data" fields of an image-folder source.
struct ImageFolderOptions {
  std::string root;                   ///< folder with one subfolder per class
  std::vector<int64_t> sample_shape;  ///< [C, H, W], C = 1 or 3
  std::string interpolation;          ///< nearest, nearest_exact, linear, linear_exact, area, cubic
  std::string to_float = "div";       ///< "div" or "mul"
  int64_t manifest_sample = 0;        ///< 0: hash every file's content
};

/// What the dataset is, as stored.
struct Manifest {
  int64_t files = 0;
  uint64_t bytes = 0;
  int64_t content_hashed = 0;  ///< files whose content entered the hash
  std::string xxh3_128;
};

/// A decoded image folder.
struct ImageFolder {
  CsvTable table;                    ///< rows = files, features = C*H*W; file_xxh3 = manifest hash
  Manifest manifest;
  std::vector<std::string> classes;  ///< label -> subfolder name
  std::vector<std::string> files;    ///< row -> "class/file"
  /// Regular files in the class folders that are not images by the listing
  /// rule (.gif, .npy, .txt, ...): not read, named once so nobody wonders
  /// why a sample is missing. "class/file", sorted.
  std::vector<std::string> skipped;
};

/// Lists, decodes and converts the folder. Throws exit-2 Error naming the
/// file and the reason: a missing root, no class folder, an empty dataset,
/// a truncated or undecodable image, an unsupported depth or channel count.
ImageFolder read_image_folder(const ImageFolderOptions& options);

}  // namespace lockstep
