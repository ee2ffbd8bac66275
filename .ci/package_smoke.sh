#!/usr/bin/env bash
# The package as a user installs it: `python -m build` makes the sdist and the wheel (the wheel from the sdist,
# so the kernel is compiled from the sdist's C sources), tests/release/dist_contents.py checks both file lists
# against the source tree, then EACH is installed into a fresh venv outside the checkout and runs
# `ragmeter --version`, `ragmeter eval` on the bundled example, `ragmeter demo --no-judge` and a static
# `ragmeter view --bundle` of a demo run (the installed templates and static files). The version in the
# installed metadata, `ragmeter --version` and every stored run record must agree with src/ragmeter/_version.py.
# Called by .ci/run; a few minutes (pip takes torch==2.13.0 and the rest from its cache or local wheels).
#   RAGMETER_SMOKE_DIR: where the build and the venvs go (default /dev/shm when it has 6 GB free, else /tmp)
#   PYTHON: the interpreter the fresh venvs are made from (default python3)
#   DEV_PYTHON: the checkout's environment (default .venv/bin/python, from `make setup`, which has `build`)
#   BUILD_PYTHON: one with `build` installed (default DEV_PYTHON)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
start=$SECONDS
base_python=${PYTHON:-python3}
dev_python=${DEV_PYTHON:-$root/.venv/bin/python}
build_python=${BUILD_PYTHON:-$dev_python}
# The venvs (torch is most of their ~1.5 GB each) go to a RAM disk when there is one with room: unlinking them
# from an ext4 disk mounted with `discard` took over four minutes on the development machine.
tmp_base=${RAGMETER_SMOKE_DIR:-/tmp}
if [ -z "${RAGMETER_SMOKE_DIR:-}" ] && [ -w /dev/shm ] \
  && [ "$(df -Pk /dev/shm | awk 'NR == 2 {print $4}')" -gt $((6 * 1024 * 1024)) ]; then
  tmp_base=/dev/shm
fi
work=$(mktemp -d "$tmp_base/ragmeter-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/tmp"
export TMPDIR="$work/tmp"  # pip's build and unpack folders too
# Nothing of the checkout may leak into the installed package's runs.
unset PYTHONPATH RAGMETER_DB VIRTUAL_ENV
# --no-compile: no .pyc for the thousands of modules of torch and transformers (Python compiles what it imports)
pip_q=(--disable-pip-version-check -q --no-compile)

fail() { echo "package smoke: FAILED: $*" >&2; exit 1; }

version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' src/ragmeter/_version.py)
[ -n "$version" ] || fail "no __version__ in src/ragmeter/_version.py"

# --- build: sdist, then the wheel from it ---
had_egg_info=$([ -d src/ragmeter.egg-info ] && echo yes || true)
if ! "$build_python" -m build --outdir "$work/dist" "$root" >"$work/build.log" 2>&1; then
  tail -n 40 "$work/build.log" >&2
  fail "python -m build (log above)"
fi
# the sdist step writes src/ragmeter.egg-info; left there it would answer importlib.metadata under PYTHONPATH=src
[ -n "$had_egg_info" ] || rm -rf src/ragmeter.egg-info
wheel=$(ls "$work"/dist/ragmeter-"$version"-*.whl 2>/dev/null) || fail "no wheel ragmeter-$version-*.whl in dist/"
sdist=$(ls "$work"/dist/ragmeter-"$version".tar.gz 2>/dev/null) || fail "no sdist ragmeter-$version.tar.gz"
echo "package smoke: built $(basename "$sdist") and $(basename "$wheel") in $((SECONDS - start)) s"
"$build_python" tests/release/dist_contents.py --src src --wheel "$wheel" --sdist "$sdist" \
  || fail "the artefacts lack files (above)"

# The checkout's own numbers on the bundled example: each installed package must reproduce them.
expected_eval=$(cd "$work" && "$dev_python" -m ragmeter eval \
  "$root/examples/demo.qrels" "$root/examples/demo.run" -m ndcg@10 -m map -m recall@5 --format json)

smoke() {  # smoke KIND ARTEFACT
  local kind=$1 artefact=$2 t0=$SECONDS
  local venv="$work/venv-$kind" here="$work/run-$kind"
  mkdir -p "$here"
  "$base_python" -m venv "$venv"
  # torch first, pinned (a plain `torch` pulls several GB of CUDA wheels): the demo's dense mode needs it.
  "$venv/bin/pip" install "${pip_q[@]}" torch==2.13.0
  local t_torch=$((SECONDS - t0))
  # the demo needs the store (SQLite), BM25 and dense retrieval; the static viewer pages need `view`
  "$venv/bin/pip" install "${pip_q[@]}" "ragmeter[store,retrieval,semantic,view] @ file://$artefact"
  local t_install=$((SECONDS - t0))
  cd "$here"
  local where
  where=$("$venv/bin/python" -c 'import ragmeter; print(ragmeter.__file__)')
  case $where in "$venv"/*) ;; *) fail "$kind: ragmeter imported from $where, not from $venv" ;; esac
  local meta cli
  meta=$("$venv/bin/python" -c 'from importlib.metadata import version; print(version("ragmeter"))')
  cli=$("$venv/bin/ragmeter" --version)
  [ "$meta" = "$version" ] || fail "$kind: installed metadata says $meta, _version.py $version"
  [ "$cli" = "ragmeter, version $version" ] || fail "$kind: ragmeter --version says '$cli', expected $version"

  local got_eval
  got_eval=$("$venv/bin/ragmeter" eval "$root/examples/demo.qrels" "$root/examples/demo.run" \
    -m ndcg@10 -m map -m recall@5 --format json)
  [ "$got_eval" = "$expected_eval" ] || fail "$kind: ragmeter eval on examples/ differs from the checkout's"

  local t_demo=$SECONDS
  "$venv/bin/ragmeter" demo --no-judge --no-progress >"$here/demo.log" 2>&1 \
    || { tail -n 30 "$here/demo.log" >&2; fail "$kind: ragmeter demo --no-judge (log above)"; }
  t_demo=$((SECONDS - t_demo))
  local db="sqlite:///$here/.ragmeter/ragmeter.db" runs
  runs=$("$venv/bin/ragmeter" runs list --db "$db" --format json)
  local stored
  stored=$(printf '%s' "$runs" | "$venv/bin/python" -c '
import json, sys
runs = json.load(sys.stdin)
assert len(runs) == 3 and all(r["status"] == "completed" for r in runs), [r["status"] for r in runs]
print(" ".join(sorted({r["versions"]["ragmeter"] for r in runs})), runs[0]["run_id"])
') || fail "$kind: the demo did not store three completed runs"
  [ "${stored% *}" = "$version" ] || fail "$kind: stored run records say ragmeter ${stored% *}, expected $version"

  "$venv/bin/ragmeter" view --db "$db" --bundle "$here/bundle" --run "${stored#* }" >/dev/null \
    || fail "$kind: ragmeter view --bundle"
  [ -s "$here/bundle/index.html" ] || fail "$kind: the static bundle has no index.html"
  [ -n "$(find "$here/bundle" -name '*.css' -size +0)" ] || fail "$kind: the static bundle has no stylesheet"
  cd "$root"
  echo "package smoke: $kind $(basename "$artefact"): metadata, --version and 3 stored runs say $version;" \
    "eval matches the checkout; demo and view bundle ran ($((SECONDS - t0)) s: venv and torch $t_torch s," \
    "ragmeter and its extras $((t_install - t_torch)) s, demo $t_demo s)"
}

smoke wheel "$wheel"
smoke sdist "$sdist"
echo "package smoke: passed in $((SECONDS - start)) s"
