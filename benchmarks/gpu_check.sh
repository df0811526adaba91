#!/usr/bin/env bash
# The GPU check of issue 32: one script, under 8 minutes on an H100 or H200, no network.
#
#   bash benchmarks/gpu_check.sh              # on a CUDA machine, from the checkout's root
#   bash benchmarks/gpu_check.sh --dry-run    # the same steps at toy sizes on the CPU
#   bash benchmarks/gpu_check.sh --out DIR    # table, JSON and log there (default: $OUT,
#                                             # else gpu-check/)
#
# It runs tests/test_gpu.py (and test_threads.py), benchmarks/bench_training.py in fp32 and
# bf16, `netfl simulate mab_cs_paper` for 100 rounds on CIFAR-shaped data it generates
# (benchmarks/synthetic_cifar.py), and 8 seeds of it through `netfl sweep --jobs 8` against
# one; it prints one markdown table (benchmarks/gpu_check.py says what each row measures,
# docs/benchmarks.md "GPU (issue 32)" the goals). Exit 1 if a step failed.
#
# What it needs. python3 with a CUDA build of torch and numpy, scipy, pandas, pyarrow,
# pyyaml, rich, networkx, matplotlib, scikit-learn, threadpoolctl, statsmodels, pytest and
# hypothesis (the lent GPU machines' image has all of these). netfl's remaining
# dependencies travel as wheels in .whl/ at the checkout's root, which this script
# installs with pip --no-index into a temporary folder (nothing from the network);
# netfl itself runs from the checkout (PYTHONPATH). Prepare the wheels on a machine with
# network access, in the checkout's root (CPython 3.12 on x86-64, as on the GPU image):
#
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d .whl simpy==4.1.2 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 \
#     typing-inspection==0.4.5 typing-extensions==4.16.0
#
# (2.8 MB; pydantic 2.14 needs typing-extensions >= 4.16, newer than the image may hold)
# and carry .whl with the checkout. Without .whl/ the script uses what python3 has.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if compgen -G ".whl/*.whl" >/dev/null; then
    site="$(mktemp -d)"
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --target "$site" .whl/*.whl
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
if ! "$PYTHON" -c "import netfl.cli, simpy, pydantic, torch" 2>/dev/null; then
    echo "gpu_check: $PYTHON cannot import netfl and its dependencies;" \
        "carry the wheels listed at the top of $0 in .whl/" >&2
    exit 2
fi
if [[ " $* " != *" --dry-run "* ]] && ! "$PYTHON" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    echo "gpu_check: torch sees no CUDA device; use --dry-run on a machine without one" >&2
    exit 2
fi
exec "$PYTHON" -m benchmarks.gpu_check "$@"
