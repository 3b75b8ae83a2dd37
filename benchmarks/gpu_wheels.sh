#!/usr/bin/env bash
# The wheels a GPU machine's image lacks (simpy, and pydantic with what it needs), for its Python (3.12) and
# x86-64, into .whl/ at the checkout's root, which benchmarks/gpu_check.sh installs from. Run it where pip
# reaches the package index; the GPU machine needs nothing else carried beside the checkout (and, for the
# real data set, CIFAR-10's tarball).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${1:-3.12}"
platforms=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64)
for wheel in simpy==4.1.1 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  typing-extensions==4.16.0; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$python" --implementation cp \
    "${platforms[@]/#/--platform=}" -d .whl "$wheel"
done
ls .whl
