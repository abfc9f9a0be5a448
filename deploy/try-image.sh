#!/usr/bin/env bash
# Builds deploy/Containerfile and plays a Job's life with the image, on one machine with no
# container daemon and no registry: buildah (Debian's package) builds and runs with
# `--isolation chroot`, debootstrap makes the Debian base.
#
#   deploy/try-image.sh [--base-root DIR] [--keep] [--reuse-image]
#
# --base-root DIR: a Debian bookworm root to use as the base instead of debootstrapping one;
# --keep: keep the Job's folders (the session, the served repository, the logs) afterwards;
# --reuse-image: play the Job's life with the image built last time, without building it.
#
# 1. Bases. The Containerfile's two bases are made here, not pulled: a Debian bookworm root
#    (debootstrap --variant=minbase, or the folder --base-root gives) stands in for
#    debian:bookworm-slim; the same with gcc and this machine's Rust toolchain in
#    /usr/local/rustup and /usr/local/cargo (where the official image keeps it) stands in for
#    rust:1-bookworm. Both take this machine's own certificate authorities from
#    /usr/local/share/ca-certificates (an intercepting proxy's). Both are kept in buildah's
#    storage and made once.
# 2. The image: `buildah build -f deploy/Containerfile` with those two names as the build
#    arguments it takes; nothing else of the file changes. It builds harrow from this clone
#    (crates from crates.io) and installs the runtime's packages from Debian's mirror.
# 3. The Job's life, every container as deploy/kubernetes says (command, environment,
#    Secrets, ConfigMap and mounts read from the manifests by deploy/try-image/job.py; the
#    pod's user 1000, its group-writable volumes as fsGroup makes them):
#    - a bare repository of the demo's project behind the real `git http-backend` on
#      127.0.0.1, with a token, and a Gitea API beside it (deploy/try-image/peers.py);
#    - the demo's scripted model on 127.0.0.1 (`cargo run --example scripted-model`);
#    - container 1: the run Job's checkout, then its `harrow run … --headless --push` on the
#      shared sessions folder, stopped by SIGTERM in the middle of its second task;
#    - container 2: the resume Job, `harrow resume SHORT_ID --repo URL --headless --pr
#      --trust-recorded`, with nothing of container 1 but the sessions folder: it clones the
#      address, goes on to the end, pushes the session branch and opens the pull request.
#    Then it checks what the forge received: the pushed branch with every task's commit, the
#    pull request with its token.
# Run it as root (buildah's chroot isolation). A first run takes about 12 minutes on two cores,
# 10 of them compiling harrow in the image; --reuse-image plays the Job's life again in 20 s.

set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/harrow-try-image
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
runtime_base=localhost/harrow-try/debian:bookworm-slim
build_base=localhost/harrow-try/rust:1-bookworm
image=localhost/harrow-try/harrow:latest
token=try-image-token-7f3a
base_root=
keep=
reuse=

while [ $# -gt 0 ]; do
  case "$1" in
    --base-root) base_root=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --reuse-image) reuse=1; shift ;;
    -h | --help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "try-image.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

started=$(date +%s)
say() { printf '[%4ds] %s\n' "$(($(date +%s) - started))" "$*"; }
fail() { printf 'try-image.sh: %s\n' "$*" >&2; exit 1; }

for tool in buildah git python3 cargo rustc; do
  command -v "$tool" >/dev/null || fail "needs $tool (buildah: apt-get install buildah)"
done
[ -n "$base_root" ] || command -v debootstrap >/dev/null \
  || fail "needs debootstrap to make the base (apt-get install debootstrap), or --base-root DIR"
python3 -c 'import yaml' 2>/dev/null || fail "needs python3's yaml (apt-get install python3-yaml)"
[ "$(id -u)" = 0 ] || fail "run it as root: buildah's chroot isolation needs it"

iso=(--isolation chroot)
has_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }

# --- 1. the bases ------------------------------------------------------------------------
if ! has_image "$runtime_base"; then
  if [ -z "$base_root" ]; then
    base_root=$cache/bookworm-root
    if [ ! -x "$base_root/bin/sh" ]; then
      say "making a Debian bookworm root with debootstrap ($mirror)"
      rm -rf "$base_root"
      debootstrap --variant=minbase bookworm "$base_root" "$mirror" >"$cache.debootstrap.log" 2>&1 \
        || fail "debootstrap failed: see $cache.debootstrap.log"
    fi
  fi
  [ -x "$base_root/bin/sh" ] || fail "$base_root is not a root folder (no bin/sh)"
  say "importing $base_root as $runtime_base"
  ctr=$(buildah from scratch)
  mnt=$(buildah mount "$ctr")
  cp -a "$base_root/." "$mnt/"
  # This machine's own certificate authorities (an intercepting proxy's, a company's), as a
  # site behind one puts them in its bases: Debian's ca-certificates takes them in when an
  # image installs it, and cargo and git then reach crates.io and the forge through it.
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    mkdir -p "$mnt/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$mnt/usr/local/share/ca-certificates/"
  fi
  buildah umount "$ctr" >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd bash "$ctr"
  buildah commit --quiet --rm "$ctr" "$runtime_base" >/dev/null
fi

if ! has_image "$build_base"; then
  sysroot=$(rustc --print sysroot)
  toolchain=$(basename "$sysroot")
  rustup_bin=$(readlink -f "$(command -v rustup)")
  say "making $build_base: gcc and this machine's toolchain ($toolchain)"
  ctr=$(buildah from "$runtime_base")
  buildah run "${iso[@]}" "$ctr" -- sh -c 'apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends ca-certificates gcc libc6-dev pkg-config git >/dev/null \
    && rm -rf /var/lib/apt/lists/*'
  for part in bin lib libexec etc; do
    [ -d "$sysroot/$part" ] && buildah copy --quiet "$ctr" "$sysroot/$part" \
      "/usr/local/rustup/toolchains/$toolchain/$part" >/dev/null
  done
  printf 'version = "12"\ndefault_toolchain = "%s"\nprofile = "minimal"\n' "$toolchain" \
    >"$cache.settings.toml"
  buildah copy --quiet "$ctr" "$cache.settings.toml" /usr/local/rustup/settings.toml >/dev/null
  buildah copy --quiet "$ctr" "$rustup_bin" /usr/local/cargo/bin/rustup >/dev/null
  buildah run "${iso[@]}" "$ctr" -- sh -c 'cd /usr/local/cargo/bin \
    && for p in cargo cargo-clippy cargo-fmt clippy-driver rustc rustdoc rustfmt; do ln -sf rustup $p; done'
  buildah config --env RUSTUP_HOME=/usr/local/rustup --env CARGO_HOME=/usr/local/cargo \
    --env PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    "$ctr"
  buildah commit --quiet --rm "$ctr" "$build_base" >/dev/null
fi

# --- 2. the image ------------------------------------------------------------------------
if [ -n "$reuse" ] && has_image "$image"; then
  say "using $image as built last time"
else
  say "building $image from deploy/Containerfile"
  build_started=$(date +%s)
  buildah build "${iso[@]}" --layers --quiet -f "$repo_root/deploy/Containerfile" \
    --build-arg "BUILD_IMAGE=$build_base" --build-arg "RUNTIME_IMAGE=$runtime_base" \
    -t "$image" "$repo_root" >"$cache.build.log" 2>&1 \
    || { tail -30 "$cache.build.log" >&2; fail "the image did not build: see $cache.build.log"; }
  say "image built in $(($(date +%s) - build_started)) s: $(buildah images --format '{{.Size}}' "$image")"
fi

# --- 3. the Job's life -------------------------------------------------------------------
work=$(mktemp -d /tmp/harrow-try-image.XXXXXX)
pids=()
containers=()
finish() {
  local code=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for c in "${containers[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
  if [ -n "$keep" ] || [ "$code" != 0 ]; then
    echo "the Job's folders are kept in $work"
  else
    rm -rf "$work"
  fi
}
trap finish EXIT

# The project: the demo's repository and plan, on `main`, in a bare repository served by
# git http-backend behind the token.
src=$work/source
mkdir -p "$src/src" "$src/.harrow/textstats"
cp "$repo_root"/assets/demo/repo/{Cargo.toml,AGENTS.md} "$src/"
cp "$repo_root/assets/demo/repo/gitignore" "$src/.gitignore"
cp "$repo_root"/assets/demo/repo/src/* "$src/src/"
cp "$repo_root"/assets/demo/plan/* "$src/.harrow/textstats/"
git -C "$src" init -q -b main
git -C "$src" add -A
git -C "$src" -c user.name=try -c user.email=try@localhost commit -qm "textstats: an empty library"
mkdir -p "$work/srv/team"
git clone -q --bare "$src" "$work/srv/team/textstats.git"

python3 "$here/try-image/peers.py" "$work/srv" "$token" "$work/forge.jsonl" >"$work/peers.url" &
pids+=($!)
say "building the demo's scripted model (cargo build --example scripted-model)"
(cd "$repo_root" && cargo build --quiet --example scripted-model) \
  || fail "the scripted model did not build"
"$repo_root/target/debug/examples/scripted-model" >"$work/model.url" &
pids+=($!)
for f in peers model; do
  for _ in $(seq 100); do [ -s "$work/$f.url" ] && break; sleep 0.1; done
  [ -s "$work/$f.url" ] || fail "the $f server did not start"
done
forge=$(head -1 "$work/peers.url")
model=$(head -1 "$work/model.url")
repo_url=$forge/team/textstats.git
say "forge at $forge, model at $model"

# The pod's volumes: emptyDirs and the share as fsGroup 1000 leaves them (group-owned,
# group-writable, set-gid), the Secret's file readable by the group, the ConfigMap's file.
for d in work1 work2 sessions secret config; do
  mkdir -p "$work/$d"
  chgrp 1000 "$work/$d"
  chmod 2775 "$work/$d"
done
printf '%s' "$token" >"$work/secret/token"
chgrp 1000 "$work/secret/token"
chmod 0440 "$work/secret/token"
cat >"$work/config/config.toml" <<EOF
[forge]
kind = "gitea"

[[validators]]
name = "tests"
command = "cargo test --quiet --offline"
timeout_secs = 300
EOF
chmod 0644 "$work/config/config.toml"

# One container of a Job, as its manifest says: `play JOB CONTAINER [job.py flags]`.
play() {
  local manifest=$repo_root/deploy/kubernetes/$1 name=$2
  shift 2
  local args opts=() cmd=() seen=
  mapfile -d '' args < <(python3 "$here/try-image/job.py" "$manifest" "$name" "$@")
  [ "${#args[@]}" -gt 0 ] || fail "cannot read $manifest"
  for a in "${args[@]}"; do
    if [ -z "$seen" ] && [ "$a" = -- ]; then seen=1; continue; fi
    if [ -z "$seen" ]; then opts+=("$a"); else cmd+=("$a"); fi
  done
  local ctr
  ctr=$(buildah from --quiet "$image")
  containers+=("$ctr")
  buildah run "${iso[@]}" "${opts[@]}" "$ctr" -- "${cmd[@]}"
}

model_env=(--set "HARROW_BASE_URL=$model" --set HARROW_WORKER_MODEL=harrow-demo/worker
  --set HARROW_EVALUATOR_MODEL=harrow-demo/evaluator --secret harrow-model/api-key=unused
  --secret "harrow-git/token=$token")

say "container 1: the run Job's checkout"
play harrow-run-job.yaml checkout --volume "work=$work/work1" --volume "git-token=$work/secret" \
  --set "REPO_URL=$repo_url" >"$work/checkout.log" 2>&1 \
  || { cat "$work/checkout.log" >&2; fail "the checkout failed"; }

say "container 1: harrow run … --headless --push, to be stopped in its second task"
play harrow-run-job.yaml run --volume "work=$work/work1" --volume "sessions=$work/sessions" \
  --volume "config=$work/config" "${model_env[@]}" >"$work/run.log" 2>&1 &
run_pid=$!
log=
for _ in $(seq 1800); do
  log=$(ls "$work"/sessions/*/events.jsonl 2>/dev/null | head -1 || true)
  # The second task has begun once a task landed and a later model call was logged.
  if [ -n "$log" ] && grep -q '"type":"task_done"' "$log" \
    && sed -n '/"type":"task_done"/,$p' "$log" | grep -q '"type":"model_call"'; then
    break
  fi
  kill -0 "$run_pid" 2>/dev/null || { cat "$work/run.log" >&2; fail "the run ended before its second task"; }
  sleep 1
done
harrow_pid=$(pgrep -f '^(/usr/local/bin/)?harrow run /work/repo/' | head -1 || true)
[ -n "$harrow_pid" ] || fail "cannot find the run's harrow process"
[ "$(readlink "/proc/$harrow_pid/root")" != / ] || fail "process $harrow_pid is not in the container"
say "SIGTERM to harrow (pid $harrow_pid), as Kubernetes stops a pod"
kill -TERM "$harrow_pid"
set +e
wait "$run_pid"
status=$?
set -e
cat "$work/run.log"
[ "$status" = 143 ] || fail "the run exited with $status, not 143 (SIGTERM)"
grep -q '"type":"stop"' "$log" || fail "no stop was logged"
session=$(basename "$(dirname "$log")")
short=${session: -6}
say "container 1 ended (143); session $session, resumed by its short id $short"

say "container 2: the resume Job, with nothing of container 1 but the sessions folder"
play harrow-resume-job.yaml resume --volume "work=$work/work2" --volume "sessions=$work/sessions" \
  --volume "config=$work/config" "${model_env[@]}" --set "SESSION=$short" \
  --set "REPO_URL=$repo_url" --set "GITEA_TOKEN=$token" >"$work/resume.log" 2>&1 \
  || { cat "$work/resume.log" >&2; fail "the resume failed"; }
cat "$work/resume.log"

# What the forge received.
bare=$work/srv/team/textstats.git
branch=$(git -C "$bare" for-each-ref --format='%(refname:short)' refs/heads | grep -v '^main$' | head -1)
[ -n "$branch" ] || fail "no session branch was pushed"
git -C "$bare" log --format='  %h %s' "main..$branch"
for task in T-001 T-002 T-003; do
  git -C "$bare" log --format=%s "main..$branch" | grep -q "$task" \
    || fail "the pushed branch has no commit of $task"
done
python3 - "$work/forge.jsonl" "$branch" <<'EOF'
import json, sys
calls = [json.loads(l) for l in open(sys.argv[1])]
pulls = [c for c in calls if c["method"] == "POST" and c["path"].endswith("/pulls")]
assert pulls, "no pull request was asked for: %r" % calls
pr = pulls[0]
assert pr["token"], "the pull request came without the token"
assert pr["body"]["head"] == sys.argv[2] and pr["body"]["base"] == "main", pr["body"]
print("  pull request: %s → main, %r" % (pr["body"]["head"], pr["body"]["title"]))
EOF
if grep -rqF "$token" "$work/sessions"; then
  fail "the token is written somewhere in the session folder"
fi
sandbox=$(grep -o '"sandbox":"[a-z]*"' "$log" | head -1 | cut -d'"' -f4)
case "$sandbox" in
  landlock) why=" (bubblewrap could not make namespaces as uid 1000 here: harrow fell back)" ;;
  *) why= ;;
esac
say "the worker's commands ran under: ${sandbox:-?}$why"
say "done: built, stopped by SIGTERM in container 1, resumed in container 2 from $short, branch $branch pushed and its pull request opened"
