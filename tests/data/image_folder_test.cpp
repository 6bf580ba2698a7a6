// The image folder's manifest: what `data.file_xxh3` of an image smoke
// covers, with and without `manifest_sample` (docs/smoke-config.md).
#include "data/image_folder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "core/error.h"

namespace lockstep {
namespace {
namespace fs = std::filesystem;

// Two classes of three 4x4 grey PNGs; image i is filled with 10*i.
fs::path make_folder(const std::string& name) {
  fs::path root = fs::temp_directory_path() / ("lockstep-images-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(root);
  for (int i = 0; i < 6; ++i) {
    fs::path cls = root / (i < 3 ? "cat" : "dog");
    fs::create_directories(cls);
    cv::imwrite((cls / (std::to_string(i) + ".png")).string(), cv::Mat(4, 4, CV_8UC1, cv::Scalar(10 * i)));
  }
  return root;
}

ImageFolder read(const fs::path& root, int64_t sample) {
  return read_image_folder({root.string(), {1, 4, 4}, "linear", "div", sample});
}

TEST(ImageFolder, ListsSortedAndHashesEveryFileByDefault) {
  fs::path root = make_folder("all");
  ImageFolder f = read(root, 0);
  EXPECT_EQ(f.files, (std::vector<std::string>{"cat/0.png", "cat/1.png", "cat/2.png", "dog/3.png", "dog/4.png",
                                               "dog/5.png"}));
  EXPECT_EQ(f.classes, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(f.table.labels, (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(f.manifest.files, 6);
  EXPECT_EQ(f.manifest.content_hashed, 6);
  EXPECT_EQ(f.table.file_xxh3, f.manifest.xxh3_128);
  EXPECT_FLOAT_EQ(f.table.values[4 * 16], 40.0f / 255.0f);  // image 4, first pixel

  // Same size, different pixels: the manifest changes.
  std::string before = f.manifest.xxh3_128;
  cv::imwrite((root / "dog/4.png").string(), cv::Mat(4, 4, CV_8UC1, cv::Scalar(41)));
  EXPECT_NE(read(root, 0).manifest.xxh3_128, before);
  fs::remove_all(root);
}

// manifest_sample: N hashes the content of every (count/N)-th file only;
// paths and sizes of all files still enter the hash.
TEST(ImageFolder, ManifestSampleHashesEveryNthFilesContent) {
  fs::path root = make_folder("sample");
  ImageFolder f = read(root, 2);  // every 3rd file: rows 0 and 3
  EXPECT_EQ(f.manifest.content_hashed, 2);
  EXPECT_EQ(f.manifest.files, 6);
  std::string before = f.manifest.xxh3_128;
  EXPECT_NE(before, read(root, 0).manifest.xxh3_128);  // a different coverage is a different manifest

  auto size = fs::file_size(root / "dog/4.png");
  cv::imwrite((root / "dog/4.png").string(), cv::Mat(4, 4, CV_8UC1, cv::Scalar(41)));  // row 4: not sampled
  ASSERT_EQ(fs::file_size(root / "dog/4.png"), size);  // sizes enter the hash; only the content may differ
  EXPECT_EQ(read(root, 2).manifest.xxh3_128, before);
  cv::imwrite((root / "dog/3.png").string(), cv::Mat(4, 4, CV_8UC1, cv::Scalar(31)));  // row 3: sampled
  EXPECT_NE(read(root, 2).manifest.xxh3_128, before);
  fs::remove_all(root);
}

// A JPEG cut in half with its end marker (FF D9) added back decodes, the
// rest of the image grey; libjpeg only warns ("premature end of data
// segment"). It is refused, naming the file.
TEST(ImageFolder, AJpegCutShortWithItsEndMarkerAddedBackIsRefused) {
  fs::path root = make_folder("cut-jpeg");
  cv::Mat noise(64, 64, CV_8UC3);
  cv::randu(noise, cv::Scalar::all(0), cv::Scalar::all(255));
  std::vector<uchar> jpeg;
  ASSERT_TRUE(cv::imencode(".jpg", noise, jpeg));
  jpeg.resize(jpeg.size() / 2);
  jpeg.push_back(0xFF);
  jpeg.push_back(0xD9);
  {
    std::ofstream out(root / "dog/cut.jpg", std::ios::binary);
    out.write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
  }
  try {
    read(root, 0);
    ADD_FAILURE() << "a cut JPEG was loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), (root / "dog/cut.jpg").string() +
                                         ": (image): expected a complete image; libjpeg says \"Corrupt JPEG data: "
                                         "premature end of data segment\": the file was cut short, so part of the "
                                         "image is missing");
  }
  fs::remove_all(root);
}

// A PNG whose pixel data is corrupt (its zlib header): what libpng says goes into
// lockstep's exit-2 message, not raw onto the terminal.
TEST(ImageFolder, WhatTheDecoderSaidOfAnImageItFailedOnIsInTheMessage) {
  fs::path root = make_folder("bad-crc");
  std::vector<uchar> png;
  ASSERT_TRUE(cv::imencode(".png", cv::Mat(4, 4, CV_8UC1, cv::Scalar(7)), png));
  size_t idat = 8;  // chunks after the signature: length, type, data, CRC
  while (idat + 8 < png.size() && std::string(png.begin() + static_cast<long>(idat) + 4, png.begin() + static_cast<long>(idat) + 8) != "IDAT") {
    uint32_t n = (uint32_t{png[idat]} << 24) | (uint32_t{png[idat + 1]} << 16) | (uint32_t{png[idat + 2]} << 8) | png[idat + 3];
    idat += 12 + n;
  }
  ASSERT_LT(idat + 8, png.size());
  png[idat + 8] ^= 0xFF;  // the first byte of its data, the zlib header
  {
    std::ofstream out(root / "dog/crc.png", std::ios::binary);
    out.write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  }
  // An image read before it that decodes with a warning (an ancillary
  // tEXt chunk failing its CRC: libpng warns and drops it): that warning is
  // never quoted about the failing image.
  {
    std::vector<uchar> ok;
    ASSERT_TRUE(cv::imencode(".png", cv::Mat(4, 4, CV_8UC1, cv::Scalar(9)), ok));
    const std::vector<uchar> text = {0, 0, 0, 3, 't', 'E', 'X', 't', 'a', 0, 'b', 0xde, 0xad, 0xbe, 0xef};
    ok.insert(ok.begin() + 33, text.begin(), text.end());  // after the signature (8) and IHDR (25)
    std::ofstream out(root / "cat/0a.png", std::ios::binary);
    out.write(reinterpret_cast<const char*>(ok.data()), static_cast<std::streamsize>(ok.size()));
  }
  try {
    read(root, 0);
    ADD_FAILURE() << "a PNG failing its CRC was loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    std::string what = e.what();
    EXPECT_EQ(what.rfind((root / "dog/crc.png").string() + ": ", 0), 0u) << what;
    EXPECT_NE(what.find("(the decoder said: libpng error: IDAT: "), std::string::npos) << what;
    EXPECT_EQ(what.find("tEXt"), std::string::npos) << what;
  }
  fs::remove_all(root);
}

// An image whose header declares more than kMaxImagePixels is refused
// before it is decoded (a 30000 x 30000 PNG of a few kB would take 3.6 GB):
// PNG, JPEG and BMP, each naming the file and the size.
TEST(ImageFolder, AnImageDeclaringTooManyPixelsIsRefusedFromItsHeader) {
  auto encoded = [](const std::string& ext) {
    std::vector<uchar> out;
    EXPECT_TRUE(cv::imencode(ext, cv::Mat(16, 16, CV_8UC3, cv::Scalar(1, 2, 3)), out));
    return out;
  };
  auto be16 = [](std::vector<uchar>& b, size_t at, uint32_t v) { b[at] = uchar(v >> 8), b[at + 1] = uchar(v); };
  std::vector<uchar> png = encoded(".png");
  be16(png, 16, 0), be16(png, 18, 30000), be16(png, 20, 0), be16(png, 22, 30000);  // IHDR width, height
  std::vector<uchar> jpeg = encoded(".jpg");
  for (size_t i = 2; i + 9 < jpeg.size();) {  // the SOF0 segment's height and width
    if (jpeg[i + 1] == 0xC0) {
      be16(jpeg, i + 5, 30000), be16(jpeg, i + 7, 30000);
      break;
    }
    i += 2 + (size_t{jpeg[i + 2]} << 8 | jpeg[i + 3]);
  }
  std::vector<uchar> bmp = encoded(".bmp");
  bmp[18] = 0x30, bmp[19] = 0x75, bmp[22] = 0x30, bmp[23] = 0x75;  // 30000 little-endian
  // Fill bytes (FF) before a JPEG marker are allowed: the scan skips them.
  std::vector<uchar> filled = jpeg;
  for (size_t i = 2; i + 9 < filled.size();) {
    if (filled[i + 1] == 0xC0) {
      filled.insert(filled.begin() + static_cast<long>(i), {0xFF, 0xFF, 0xFF});
      break;
    }
    i += 2 + (size_t{filled[i + 2]} << 8 | filled[i + 3]);
  }
  // TIFF: the first IFD's ImageWidth (256) and ImageLength (257), little-endian.
  std::vector<uchar> tiff = encoded(".tiff");
  auto le = [&](size_t at, int n) {
    uint32_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = v << 8 | tiff[at + static_cast<size_t>(k)];
    return v;
  };
  EXPECT_EQ(tiff[0], 'I');
  for (uint32_t k = 0, ifd = le(4, 4), n = le(ifd, 2); k < n; ++k) {
    size_t e = ifd + 2 + 12 * k;
    if (le(e, 2) == 256 || le(e, 2) == 257) {
      bool is_short = le(e + 2, 2) == 3;
      tiff[e + 8] = 0x30, tiff[e + 9] = 0x75;
      if (!is_short) tiff[e + 10] = 0, tiff[e + 11] = 0;
    }
  }
  for (const auto& [name, bytes] : {std::pair<std::string, std::vector<uchar>>{"big.png", png},
                                    {"big.jpg", jpeg}, {"big.bmp", bmp}, {"filled.jpg", filled},
                                    {"big.tiff", tiff}}) {
    fs::path root = make_folder("big-" + name);
    {
      std::ofstream out(root / "dog" / name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    try {
      read(root, 0);
      ADD_FAILURE() << name << " was loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_EQ(std::string(e.what()), (root / "dog" / name).string() +
                                           ": (image): expected at most 67108864 pixels (8192 x 8192), got 30000 x "
                                           "30000 declared in its header (decoding it would take up to 6866 MiB)");
    }
    fs::remove_all(root);
  }
}

// An OS/2 bitmap (12-byte BITMAPCOREHEADER, 16-bit sizes) is read by its
// own header's layout: a 40 x 36 image loads.
TEST(ImageFolder, AnOs2BitmapIsReadByItsOwnHeader) {
  fs::path root = make_folder("os2-bmp");
  std::vector<uchar> bmp = {'B', 'M'};
  const uint32_t row = 40 * 3, size = 26 + row * 36;
  for (uint32_t v : {size, 0u, 26u, 12u}) for (int k = 0; k < 4; ++k) bmp.push_back(uchar(v >> (8 * k)));
  for (uint16_t v : {uint16_t{40}, uint16_t{36}, uint16_t{1}, uint16_t{24}}) bmp.push_back(uchar(v)), bmp.push_back(uchar(v >> 8));
  bmp.resize(size, 0x7f);
  {
    std::ofstream out(root / "dog" / "os2.bmp", std::ios::binary);
    out.write(reinterpret_cast<const char*>(bmp.data()), static_cast<std::streamsize>(bmp.size()));
  }
  EXPECT_EQ(read(root, 0).table.rows, 7);
  fs::remove_all(root);
}

// Every entry that is not loaded is named with its reason (dotfiles
// aside): files that are not images, a symbolic link loop, images below a
// class folder and files at the root.
TEST(ImageFolder, EveryEntryNotLoadedIsNamedWithItsReason) {
  fs::path root = make_folder("skipped");
  for (const char* f : {"cat/notes.txt", "dog/frame.gif", "dog/array.npy", "dog/.hidden", "readme.png"}) {
    std::ofstream out(root / f);
    out << "x";
  }
  fs::create_symlink("l2", root / "cat/l1");  // a loop: named; a dotfile loop: never looked at
  fs::create_symlink("l1", root / "cat/l2");
  fs::create_symlink(".h2", root / "cat/.h1");
  fs::create_symlink(".h1", root / "cat/.h2");
  fs::create_directories(root / "cat/sub");
  fs::copy_file(root / "dog/4.png", root / "cat/sub/4.png");
  ImageFolder f = read(root, 0);
  EXPECT_EQ(f.files.size(), 6u);
  EXPECT_EQ(f.skipped,
            (std::vector<std::string>{
                "cat/l1 (a symbolic link loop)",
                "cat/l2 (a symbolic link loop)",
                "cat/notes.txt (not an image name (.png .jpg .jpeg .tif .tiff .bmp))",
                "cat/sub (a folder; images are read from the class folders only, not below them)",
                "dog/array.npy (not an image name (.png .jpg .jpeg .tif .tiff .bmp))",
                "dog/frame.gif (not an image name (.png .jpg .jpeg .tif .tiff .bmp))",
                "readme.png (a file at the root; images are read from the class folders only)"}));
  EXPECT_EQ(f.table.skipped, f.skipped);
}

// An image of a class whose bytes are not here (a dangling link: what an
// unfetched Git LFS or git-annex file looks like) is exit 2 naming it:
// training on the rest would pass, or bless a golden, on part of the data.
TEST(ImageFolder, AnImageLinkToNothingIsBadInputNamingIt) {
  fs::path root = make_folder("unfetched");
  fs::create_symlink("../../.git/annex/objects/xx/6.png", root / "dog/6.png");
  try {
    read(root, 0);
    ADD_FAILURE() << "an image link to nothing was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), (root / "dog/6.png").string() + ": (image): expected an image file; this is a "
              "symbolic link to nothing: an unfetched Git LFS or git-annex file? (fetch it: `git lfs pull`, "
              "`git annex get`)");
  }
}


// Anything else under an image's name in a class folder (a folder, a FIFO)
// is exit 2 naming it too: the image it names is not there.
TEST(ImageFolder, AFolderOrFifoUnderAnImagesNameIsBadInputNamingIt) {
  fs::path root = make_folder("not-images");
  fs::remove(root / "dog/4.png");
  fs::create_directories(root / "dog/4.png");
  try {
    read(root, 0);
    ADD_FAILURE() << "a folder named like an image was skipped";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_EQ(std::string(e.what()), (root / "dog/4.png").string() + ": (image): expected an image file; this is a "
              "folder; images are read from the class folders only, not below them");
  }
  fs::remove_all(root / "dog/4.png");
  ASSERT_EQ(::mkfifo((root / "dog/4.png").c_str(), 0600), 0);
  try {
    read(root, 0);
    ADD_FAILURE() << "a FIFO named like an image was skipped";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), (root / "dog/4.png").string() + ": (image): expected an image file; this is not "
              "a regular file (a FIFO, socket or device)");
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace lockstep
