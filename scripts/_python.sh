# Sourced by the scripts in this folder: picks the Python they use and exports it as PYTHON (and PY).
# $PYTHON when set; otherwise a virtual environment of its own (.venv in the checkout, or $SAC_VENV), created on first
# use, so that nothing installed system-wide can hide a missing dependency.
if [ -z "${PYTHON:-}" ]; then
  SAC_VENV=${SAC_VENV:-$PWD/.venv}
  if [ ! -x "$SAC_VENV/bin/python" ]; then
    echo "scripts: creating the virtual environment $SAC_VENV" >&2
    python3 -m venv "$SAC_VENV"
  fi
  PYTHON=$SAC_VENV/bin/python
  export PATH="$SAC_VENV/bin:$PATH"   # llama-sac and the tools the tests start by name
fi
export PYTHON
PY=$PYTHON
