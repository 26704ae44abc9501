#!/usr/bin/env bash
# The Array API standard's own test suite (data-apis/array-api-tests, pinned in
# shared/external/) on an engine's namespace. Fails unless the failures are exactly the
# tests listed in the engine's xfails file (tests/array_api/<engine>-xfails.txt): an
# unlisted failure fails the run, and so do a listed test that passes (xfail_strict) and a
# listed id that matches no test.
#
# Usage: tests/array_api/run_suite.sh [ENGINE] [more pytest arguments]
#   ENGINE: tape (the default: adswitch_tape.namespace, fft disabled), autograd
#   (adswitch_autograd.namespace, fft disabled), or any importable namespace module (numpy,
#   array_api_strict...: no xfails file unless XFAILS names one; for comparisons).
# Environment: PYTHON (default: python), MAX_EXAMPLES (default: 10, about 20 s on two
# cores), DISABLE (the extensions to disable, default the engine's: "fft" for the
# tape, "fft" for autograd and other modules; "fft linalg" runs autograd as issue 13
# measured it), XFAILS (an xfails file instead of the engine's; empty for none),
# ARRAY_API_TESTS_DIR (default: shared/external/array-api-tests beside the repository, or
# beside its main checkout for a git worktree).
# Needs pytest, hypothesis and ndindex.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
py=${PYTHON:-python}
engine=tape
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
    engine=$1
    shift
fi
case "$engine" in
    tape)
        module=adswitch_tape.namespace default_disable="fft"
        default_xfails="$here/tape-xfails.txt" ;;
    autograd)
        module=adswitch_autograd.namespace default_disable="fft"
        default_xfails="$here/autograd-xfails.txt" ;;
    *)
        module=$engine default_disable="fft" default_xfails="" ;;
esac
xfails=${XFAILS-$default_xfails}
read -r -a disable <<< "${DISABLE-$default_disable}"
suite=${ARRAY_API_TESTS_DIR:-}
if [ -z "$suite" ]; then
    # shared/ lies beside the repository (a git worktree: beside its main checkout)
    common=$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    for base in "$root/.." "$root" ${common:+"$common/../.."}; do
        if [ -d "$base/shared/external/array-api-tests" ]; then
            suite="$base/shared/external/array-api-tests"
            break
        fi
    done
fi
if [ -z "$suite" ] || [ ! -d "$suite/array_api_tests" ]; then
    echo "run_suite.sh: the array-api-tests suite was not found; set ARRAY_API_TESTS_DIR" >&2
    exit 2
fi
if ! "$py" -c "import hypothesis, ndindex, pytest" 2>/dev/null; then
    echo "run_suite.sh: the suite needs pytest, hypothesis and ndindex (pip install ndindex)" >&2
    exit 2
fi
if [ -n "$xfails" ]; then
    if [ ! -f "$xfails" ]; then
        echo "run_suite.sh: no xfails file $xfails" >&2
        exit 2
    fi
    xfails="$(cd "$(dirname "$xfails")" && pwd)/$(basename "$xfails")"  # the suite runs elsewhere
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$suite" "$work/aat"      # shared/ is laid read-only; the suite writes beside itself
chmod -R u+w "$work/aat"
cd "$work/aat"

export PYTHONPATH="$root:$root/plugins:$here${PYTHONPATH:+:$PYTHONPATH}"
export ARRAY_API_TESTS_MODULE=$module ARRAY_API_TESTS_VERSION=2023.12
export PYTHONHASHSEED=0  # with --derandomize, the same examples on every run
options=()
if [ ${#disable[@]} -gt 0 ]; then
    options+=(--disable-extension "${disable[@]}")  # followed by an option: it takes a list
fi
if [ -n "$xfails" ]; then
    options+=(--xfails-file "$xfails")
fi
status=0
"$py" -m pytest array_api_tests -q -p no:cacheprovider -p seeded -o xfail_strict=True -rfEX \
    "${options[@]}" --max-examples "${MAX_EXAMPLES:-10}" --derandomize --disable-deadline \
    "$@" 2>&1 | tee "$work/log" || status=$?
if grep -q "ids in xfails file don't match any collected tests" "$work/log"; then
    echo "run_suite.sh: $(basename "$xfails") lists ids that match no test (see the warning above)" >&2
    exit 1
fi
exit "$status"
