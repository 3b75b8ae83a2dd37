#!/usr/bin/env bash
# The GPU path's check, in one call of under 8 minutes on a CUDA machine (docs/gpu.md has what it measured):
#
#   bash benchmarks/gpu_wheels.sh                 # first, where pip reaches the index: .whl/ (simpy, pydantic)
#   bash benchmarks/gpu_check.sh OUT [CIFAR-10]   # then on the GPU machine, from the checkout's root
#
# It installs .whl/ (if there) into /tmp/site, then runs the CUDA tests (pytest -m cuda), the measurements
# (benchmarks/gpu_measure.py: environment, decode, staging, seconds per iteration) and the twin's run
# (benchmarks/calibration.py on scenarios/cifar10-gpu.yaml: calibrated from uncoded and FR, CR, fastest-6 and
# a deadline predicted). Without CIFAR-10 (a tarball or folder) the runs train on synthetic CIFAR-shaped data.
# OUT gets check.log (everything printed), tables.tar.gz (the CSVs and logs) and calibration-run.tar.gz (the
# twin's real run, to calibrate again anywhere: benchmarks/calibration.py --reuse). It exits 1 where a step
# failed (named at the end of check.log).
#
# It installs nothing but .whl/: the machine's python3 must have torch (with CUDA), torchvision and gcbench's
# other dependencies but simpy and pydantic (numpy, scipy, pandas, pyarrow, matplotlib, seaborn, pyyaml, rich,
# typer, threadpoolctl, pytest), as a CUDA image with PyTorch does; elsewhere, pip install -e '.[real,dev]'
# first and leave .whl/ out. gcbench runs from the checkout (PYTHONPATH), Ray is not needed.
set -uo pipefail
device=${DEVICE:-cuda}  # (DEVICE=cpu tries the script on a machine without a GPU)
out=$(realpath -m "${1:?usage: gpu_check.sh OUT [CIFAR-10 tarball or folder]}")
data=${2:+$(realpath "$2")}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
mkdir -p "$out" "$work/tables"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 2
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1
start=$SECONDS
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  if [ "${GPU_CHECK_TESTS:-1}" != 0 ]; then  # (GPU_CHECK_TESTS=0 leaves them out: a rerun of the measurements)
    echo "== CUDA tests"
    timeout 200 python3 -m pytest -m cuda -q -rs -p no:cacheprovider tests/test_scheme_torch.py \
      tests/test_ddp_allreduce.py tests/test_cuda.py 2>&1 | tee "$work/tables/tests.log" || echo "the CUDA tests" >>"$work/failed"
  fi
  echo "== measurements ($((SECONDS - start)) s so far)"
  timeout 270 python3 benchmarks/gpu_measure.py --device "$device" --out "$work/tables" --runs "$work/runs" \
    --budget 200 ${data:+--data-dir "$data"} || echo "the measurements" >>"$work/failed"
  echo "== the twin on the GPU ($((SECONDS - start)) s so far)"
  timeout 150 python3 benchmarks/calibration.py --backend torch --scenario scenarios/cifar10-gpu.yaml \
    --device "$device" --iterations 100 --seeds 0 --turn 50 --skip-timing --out "$work/calibration" \
    ${data:+--data-dir "$data"} || echo "the twin's run" >>"$work/failed"
  echo "gpu_check: $((SECONDS - start)) s in all"
  [ -s "$work/failed" ] && echo "gpu_check: failed: $(paste -sd, "$work/failed")"
} 2>&1 | tee "$out/check.log"
cp "$out/check.log" "$work/tables/"
tar czf "$out/tables.tar.gz" -C "$work" tables
[ -d "$work/calibration" ] && tar czf "$out/calibration-run.tar.gz" -C "$work" calibration
ls -la "$out"
[ ! -s "$work/failed" ]
