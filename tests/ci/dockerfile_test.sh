#!/usr/bin/env bash
# No Docker engine runs in CI, so the Dockerfiles are held to what can be
# checked without one: exact base tags, the LibTorch pin, the contract's
# environment, a non-root user, and only scripts that CI itself runs;
# Dockerfile.cpu's final stage to runtime packages only; .dockerignore to
# keeping build folders out of the context and the sources in.
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "dockerfile_test: $*" >&2; exit 1; }
# The text of a Dockerfile with its continuation lines joined.
flat() { sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' "$1"; }
# The last stage: what the image is.
final_stage() { awk '/^FROM /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$1"; }
for f in Dockerfile Dockerfile.cpu; do
  # Every FROM is an exact tag, or an earlier stage of the same file.
  stages=" "
  while read -r _ from as name; do
    [[ " $stages " == *" $from "* ]] && continue
    [[ "$from" == *:* && "$from" != *:latest && "$from" != *'$'* ]] || fail "$f: base '$from' is not pinned to an exact tag"
    [[ "${as,,}" == as && -n "$name" ]] && stages+="$name "
  done < <(grep -E '^FROM ' "$f")
  [ "$(grep -cE '^FROM ' "$f")" -ge 1 ] || fail "$f: no FROM"
  final=$(final_stage "$f")
  grep -q 'CUBLAS_WORKSPACE_CONFIG=:4096:8' <<<"$final" || fail "$f: CUBLAS_WORKSPACE_CONFIG not set"
  { grep -q 'TZ=UTC' <<<"$final" && grep -q 'LANG=C.UTF-8' <<<"$final"; } || fail "$f: TZ/LANG not set"
  grep -q 'LD_LIBRARY_PATH= PYTHONPATH=' <<<"$final" || fail "$f: LD_LIBRARY_PATH/PYTHONPATH not cleared"
  grep -q 'LOCKSTEP_DATA_DIR=/var/cache/lockstep/data' <<<"$final" || fail "$f: LOCKSTEP_DATA_DIR not set"
  grep -qE '^USER [a-z]' <<<"$final" || fail "$f: no non-root USER"
  grep -qF 'CMD ["lockstep", "--help"]' <<<"$final" || fail "$f: CMD is not lockstep --help"
  # A GitLab `image:` runs the job's shell: an ENTRYPOINT would have to be overridden.
  if grep -q '^ENTRYPOINT' "$f"; then fail "$f: has an ENTRYPOINT (a GitLab job would have to override it)"; fi
  grep -q 'cmake --install build --prefix /usr/local' "$f" || fail "$f: lockstep is not installed with cmake --install"
  grep -q 'LOCKSTEP_BUILD_TESTS=OFF' "$f" || fail "$f: the image builds the test binaries"
  for s in $(grep -oE 'ci/[a-z-]+\.sh' "$f" | sort -u); do
    [ -f "$s" ] || fail "$f calls $s, which does not exist"
    grep -rqF "$s" ci/test.sh ci/smoke.sh tests/ci/*.sh || fail "$f calls $s, which CI never runs"
  done
done
grep -q 'cudnn-devel' Dockerfile || fail "Dockerfile: base is not a CUDA + cuDNN development image"
pin=$(grep -E '^ARG LIBTORCH_SHA256=' Dockerfile | cut -d= -f2)
[[ "$pin" =~ ^[0-9a-f]{64}$ ]] || fail "Dockerfile: LIBTORCH_SHA256 is not a SHA-256"
grep -q "$pin" ci/fetch-libtorch.sh || fail "Dockerfile and ci/fetch-libtorch.sh pin different archives"
# The GPU jobs build on the same CUDA base and the same pinned LibTorch
# (ci/fetch-libtorch.sh's default) as the image.
gpu_image=$(grep -E '^ +image: nvidia/cuda' .gitlab-ci.yml | awk '{print $2}')
[ "$gpu_image" = "$(grep -E '^FROM ' Dockerfile | awk '{print $2}')" ] ||
  fail ".gitlab-ci.yml's GPU image '$gpu_image' is not the Dockerfile's base"
grep -q 'bash ci/fetch-libtorch.sh /opt/libtorch$' .gitlab-ci.yml || fail ".gitlab-ci.yml's GPU jobs do not fetch the pinned LibTorch"

# Dockerfile.cpu: a builder stage and a runtime stage on the same pinned
# base; the runtime stage installs Debian runtime libraries only (no -dev
# package, no compiler, no build script) and takes lockstep's install tree
# and the data cache from the builder.
f=Dockerfile.cpu
bases=$(grep -E '^FROM ' "$f" | awk '{print $2}' | grep -vxF builder | sort -u)
{ [ "$(grep -cE '^FROM ' "$f")" -eq 2 ] && [ "$(wc -l <<<"$bases")" -eq 1 ]; } ||
  fail "$f: not two stages on the same pinned base"
grep -qE '^FROM [^ ]+ AS builder$' "$f" || fail "$f: the first stage is not named builder"
final=$(flat "$f" | final_stage /dev/stdin)
runtime_packages=$(flat "$f" | sed -nE 's/^ARG RUNTIME_PACKAGES="([^"]*)".*/\1/p')
[ -n "$runtime_packages" ] || fail "$f: no ARG RUNTIME_PACKAGES=\"...\" before the first FROM"
for p in libtorch1.13 libopencv-imgcodecs406 libgit2-1.5; do
  [[ " $runtime_packages " == *" $p "* ]] || fail "$f: RUNTIME_PACKAGES lacks $p"
done
compilers='(^|[[:space:]])([a-z0-9.+-]+-dev|build-essential|gcc(-[0-9]+)?|g\+\+(-[0-9]+)?|clang(-[0-9]+)?|cmake|ninja-build|ccache|binutils)([[:space:]]|$)'
if grep -qE "$compilers" <<<"$runtime_packages"; then fail "$f: RUNTIME_PACKAGES holds a -dev package or a build tool"; fi
grep -qF -- '--no-install-recommends $RUNTIME_PACKAGES' <<<"$final" ||
  fail "$f: the runtime stage does not install \$RUNTIME_PACKAGES without recommends"
if grep -E 'apt-get install' <<<"$final" | grep -qE "$compilers"; then fail "$f: the runtime stage installs build packages"; fi
if grep -qE 'ci/(deps|build)\.sh|cmake ' <<<"$final"; then fail "$f: the runtime stage builds"; fi
grep -q '^COPY --from=builder /usr/local/ /usr/local/' <<<"$final" || fail "$f: the runtime stage lacks the install tree"
grep -q '^COPY --from=builder /var/cache/lockstep/ /var/cache/lockstep/' <<<"$final" || fail "$f: the runtime stage lacks the data cache"
{ grep -q 'useradd --create-home --uid 10001 lockstep' <<<"$final" && grep -q '^USER lockstep$' <<<"$final"; } ||
  fail "$f: the runtime user is not lockstep (uid 10001)"
grep -q 'objdump -p /usr/local/bin/lockstep /usr/local/bin/lockstep-torch' "$f" ||
  fail "$f: the builder does not check the executables' libraries against RUNTIME_PACKAGES"

# .dockerignore: build folders, caches and .git out of the context; every
# tracked file (the recipes aside) and everything the image build reads in.
# Patterns as docker matches them (a path or any folder above it; **/ at any
# depth); `!` exceptions are not modelled, so the test errs on the side of
# "excluded".
[ -f .dockerignore ] || fail "no .dockerignore: a local build/ goes into the image's context"
mapfile -t patterns < <(grep -vE '^[[:space:]]*(#|$)' .dockerignore | sed -E 's#^/##; s#/$##')
# shellcheck disable=SC2053  # the patterns are globs on purpose
excluded() {
  local prefix=$1 pat tail
  while :; do
    for pat in "${patterns[@]}"; do
      [[ "$pat" == '!'* ]] && continue
      [[ "$prefix" == $pat ]] && return 0
      tail=${pat#'**/'}
      [[ "$pat" == '**/'* && ( "$prefix" == $tail || "$prefix" == */$tail ) ]] && return 0
    done
    [[ "$prefix" == */* ]] || return 1
    prefix=${prefix%/*}
  done
}
for p in build/CMakeCache.txt build/lockstep build-notorch/lockstep build-asan/x build-cuda/x .git/HEAD \
         lockstep-out/junit.xml .gitlab-ci-local/state .cache/lockstep-data/x .ccache/x gpu-check-out/x \
         src/CMakeFiles/x CMakeCache.txt goldens/.a.json.tmp.1 compile_commands.json; do
  excluded "$p" || fail ".dockerignore lets $p into the context"
done
needed=(CMakeLists.txt src/cli/main.cpp ci/deps.sh ci/fetch-data.sh ci/build.sh ci/make-man.sh ci/pre-push
        ci/templates/lockstep.gitlab-ci.yml python/lockstep/__init__.py docs/record.schema.json README.md
        smoke/digits-cnn.json goldens/digits-cnn/cpu-x86_64-avx2.json)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t tracked < <(git ls-files)
  needed+=("${tracked[@]}")
fi
for p in "${needed[@]}"; do
  case "$p" in Dockerfile|Dockerfile.cpu|.dockerignore) continue ;; esac
  if excluded "$p"; then fail ".dockerignore keeps $p out of the context"; fi
done
echo "dockerfile_test: Dockerfile and Dockerfile.cpu pinned and calling tested scripts only;" \
  "Dockerfile.cpu's runtime stage holds runtime packages only; .dockerignore keeps build outputs out"
