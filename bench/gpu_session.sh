#!/usr/bin/env bash
# What the GPU numbers and GPU test runs were made with, on the device tool's GPU machine (its
# Python holds torch and triton; the project's other dependencies travel as wheels in .whl,
# and bubblewrap with its libraries in .devbin, for an image that has none):
#   bench/gpu_session.sh tests [PYTEST ARGS...]  the GPU tests (skipped in CI), and the triton
#                                                backend's own tests on the GPU
#   bench/gpu_session.sh pytest ARGS...          pytest ARGS alone (some GPU tests, say)
#   bench/gpu_session.sh bench [ARGS...]         accelopt bench gpu ARGS, JSON saved under $OUT
#                                                (--breakdown --passes 1: where the time goes)
#   bench/gpu_session.sh flashinfer              the FlashInfer-Bench round trip on this GPU: the
#                                                test suite's made-up dataset imported, profiled
#                                                (measured), exported, and run by flashinfer-bench's
#                                                own `apply` (bench/flashinfer_apply.py)
#   bench/gpu_session.sh suite DATASET [I/N [K]] the public Triton solutions of an assembled
#                                                FlashInfer Trace dataset (tools.flashinfer_suite)
#                                                timed beside their published traces
#                                                (bench/flashinfer_suite.py), JSON under $OUT
set -uo pipefail
OUT="${OUT:-/tmp/accelopt-out}"
mkdir -p "$OUT" "${ACCELOPT_HOME:-/tmp/accelopt}"
# once per machine: two sessions side by side (one per GPU) share what the first installed
if [ ! -e /tmp/site/.installed ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && touch /tmp/site/.installed || exit 1
fi
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1
export ACCELOPT_HOME="${ACCELOPT_HOME:-/tmp/accelopt}"
export ACCELOPT_DB="${ACCELOPT_DB:-sqlite:///$ACCELOPT_HOME/accelopt.db}"
if ! command -v bwrap >/dev/null && [ -x .devbin/bwrap ]; then
    cp .devbin/bwrap /usr/local/bin/ && cp .devbin/*.so* /usr/local/lib/ && ldconfig
fi
if bwrap --ro-bind / / --unshare-pid --unshare-net --die-with-parent --proc /proc --dev /dev true
then
    echo "sandbox: bubblewrap"
else
    echo "sandbox: bubblewrap cannot run here: ACCELOPT_SANDBOX=none"
    export ACCELOPT_SANDBOX=none
fi
accelopt() { python3 -m daemon "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
case "${1:-}" in
    tests)
        python3 -m pytest -q -p no:cacheprovider -o addopts="" --timeout=600 -rs \
            tests/nkibench/backends/test_triton_gpu.py tests/flashinfer/test_gpu_round_trip.py \
            tests/nkibench/backends/test_triton_backend.py tests/nkibench/test_breakdown.py \
            tests/nkibench/backends/test_triton_counters.py \
            tests/nkibench/backends/test_triton_canaries.py "${@:2}" 2>&1 | tee "$OUT/tests.log"
        ;;
    pytest)
        python3 -m pytest -q -p no:cacheprovider -o addopts="" --timeout=600 -rs "${@:2}" \
            2>&1 | tee "$OUT/tests.log"
        ;;
    bench)
        accelopt bench gpu --save "$OUT/bench_gpu.json" "${@:2}" 2>&1 | tee "$OUT/bench.log"
        ;;
    flashinfer)
        root=/tmp/fib-dataset tasks=/tmp/fib-tasks traces="$OUT/flashinfer"
        rm -rf "$root" "$tasks" "$traces"
        python3 -c 'import sys; from pathlib import Path; from tests.flashinfer.dataset import write_dataset; write_dataset(Path(sys.argv[1]))' "$root"
        accelopt import-flashinfer "$root" "$tasks" --json | tee "$OUT/import.json"
        for task in "$tasks"/*/; do
            accelopt profile "$task" --backend triton --shapes full 2>&1 | tee -a "$OUT/profiles.log"
        done
        # the daemon records the baselines' profiles (what export reads), then stops
        # (python itself in the background, not the shell function: the TERM must reach it)
        python3 -m daemon daemon --watch "$tasks" --backend triton --shapes full \
            > "$OUT/daemon.log" 2>&1 &
        daemon=$!
        for _ in $(seq 1 60); do
            sleep 5
            accelopt status --json > "$OUT/status.json" 2>/dev/null || continue
            python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tasks"]; sys.exit(0 if t and all(x["platforms"] and all(p["profiles"] for p in x["platforms"]) for x in t) else 1)' "$OUT/status.json" && break
        done
        kill -TERM "$daemon"; wait "$daemon"
        for task in "$tasks"/*/; do
            accelopt export "$task" --format flashinfer --out "$traces" 2>&1 | tee -a "$OUT/export.log"
        done
        python3 bench/flashinfer_apply.py "$traces" | tee "$OUT/apply.json"
        ;;
    suite)
        python3 bench/flashinfer_suite.py "$2" /tmp/fib-suite-work "${3:-1/1}" "${4:-0}" \
            > "$OUT/suite_${3//\//of}.json" 2> >(tee "$OUT/suite.log" >&2)
        ;;
    *)
        echo "usage: $0 tests|pytest|bench|flashinfer|suite [ARGS...]" >&2
        exit 2
        ;;
esac
