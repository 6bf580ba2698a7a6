// A fresh private folder under the system's temporary folder, removed
// with everything in it when the object goes, however the work ends; or
// kept, when a failure's logs must outlive it. One implementation for
// every command that needs scratch space (bisect's commit copies, env's
// interpreter probe, a trainer's batch sweep).
//
//   TempFolder scratch("lockstep-bisect");     // /tmp/lockstep-bisect-k3Xq9a
//   run_in(scratch.path());
//   // on a failure worth reading: scratch.keep();
#pragma once

#include <string>

namespace lockstep {

/// A folder made by mkdtemp(3), mode 0700, named `<prefix>-` and six
/// random characters; removed recursively on destruction unless keep().
class TempFolder {
 public:
  /// Throws EnvironmentError (exit 3) naming the temporary folder when it
  /// cannot be made.
  explicit TempFolder(const std::string& prefix);
  ~TempFolder();
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;

  /// Its absolute path.
  const std::string& path() const { return path_; }
  /// Leaves the folder in place when this object goes.
  void keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

}  // namespace lockstep
