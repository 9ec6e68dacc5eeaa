#!/usr/bin/env bash
# What bench/GPU.md's numbers were measured with, on the device tool's GPU machine (its
# Python holds torch and triton; the project's other dependencies travel as wheels in .whl):
#   bench/gpu_session.sh tests            the GPU tests (skipped in CI) and the suite on the GPU
#   bench/gpu_session.sh bench [ARGS...]  accelopt bench gpu ARGS, JSON saved under $OUT
set -uo pipefail
OUT="${OUT:-/tmp/accelopt-out}"
mkdir -p "$OUT" /tmp/accelopt
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1
export ACCELOPT_HOME=/tmp/accelopt ACCELOPT_DB=sqlite:////tmp/accelopt/accelopt.db
accelopt() { python3 -c 'from daemon.cli import main; main()' "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
case "${1:-}" in
    tests)
        python3 -m pytest -q -p no:cacheprovider -o addopts="" --timeout=900 \
            tests/test_triton_gpu.py tests/test_triton_backend.py "${@:2}" 2>&1 | tee "$OUT/tests.log"
        ;;
    bench)
        accelopt bench gpu --save "$OUT/bench_gpu.json" "${@:2}" 2>&1 | tee "$OUT/bench.log"
        ;;
    *)
        echo "usage: $0 tests|bench [ARGS...]" >&2
        exit 2
        ;;
esac
