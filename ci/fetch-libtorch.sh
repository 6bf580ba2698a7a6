#!/usr/bin/env bash
# Downloads a LibTorch archive, refuses it unless its SHA-256 is the pinned
# one, and unpacks it into DEST (atomically: a half-unpacked LibTorch is
# never left at DEST). The Dockerfile's CUDA image uses it; ci/test.sh
# tests it against a local archive (tests/ci/fetch_libtorch_test.sh).
#   ci/fetch-libtorch.sh DEST [URL SHA256]
# Default: LibTorch 2.5.0 + CUDA 12.4, cxx11 ABI. Its SHA-256 is the one
# nixpkgs pins for the same URL (pkgs/.../libtorch/binary-hashes.nix,
# sha256-UaX47GAwyZ6UmzgY85TeAHmy3u52pBHhiyM5NAz7ens=).
set -euo pipefail
dest="${1:?usage: ci/fetch-libtorch.sh DEST [URL SHA256]}"
url="${2:-https://download.pytorch.org/libtorch/cu124/libtorch-cxx11-abi-shared-with-deps-2.5.0%2Bcu124.zip}"
sha256="${3:-51a5f8ec6030c99e949b3818f394de0079b2deee76a411e18b2339340cfb7a7b}"

if [ -e "$dest/share/cmake/Torch/TorchConfig.cmake" ]; then
  echo "fetch-libtorch: $dest already holds LibTorch"
  exit 0
fi
parent=$(dirname "$dest")
mkdir -p "$parent"
work=$(mktemp -d "$parent/.libtorch.XXXXXX")
trap 'rm -rf "$work"' EXIT
curl -fsSL --retry 3 -o "$work/libtorch.zip" "$url"
echo "$sha256  $work/libtorch.zip" | sha256sum --check --status || {
  echo "fetch-libtorch: SHA-256 mismatch for $url" >&2
  echo "  expected $sha256" >&2
  echo "  got      $(sha256sum "$work/libtorch.zip" | cut -d' ' -f1)" >&2
  exit 1
}
unzip -q "$work/libtorch.zip" -d "$work/unpacked"
[ -e "$work/unpacked/libtorch/share/cmake/Torch/TorchConfig.cmake" ] || {
  echo "fetch-libtorch: $url holds no libtorch/share/cmake/Torch/TorchConfig.cmake" >&2
  exit 1
}
mv "$work/unpacked/libtorch" "$dest"
echo "fetch-libtorch: $url (SHA-256 verified) -> $dest"
