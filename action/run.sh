#!/usr/bin/env bash
# The script behind action.yml: install runtime, execute one capability, publish the
# JSON result as the step output `result`, and exit with runtime's own exit code.
#
# Environment (set by action.yml from the action's inputs):
#   RUNTIME_ACTION_CAPABILITY   path or name of the capability (required)
#   RUNTIME_ACTION_INPUTS       one name=value per line; values are literal (no @file)
#   RUNTIME_ACTION_INPUTS_JSON  a JSON object {"name": "value"}; values may span lines
#   RUNTIME_ACTION_INSTALL      pip requirement to install (default: this checkout)
#   RUNTIME_ACTION_ARGS         extra arguments for `capability execute` (split on spaces)
#   RUNTIME_ACTION_SKIP_INSTALL=1  use the `runtime` already on PATH (tests)
#   RUNTIME_ACTION_SETUP_CONFINEMENT  "true": make confinement work on the runner first
#   GITHUB_OUTPUT, GITHUB_ACTION_PATH  set by GitHub Actions
#
# The inputs become `--input name=value` words through action/inputs.py, which writes
# them NUL-separated (a value may hold any character but NUL) and doubles a leading '@'
# (runtime reads `@@x` as the text `@x`): no value of an input ever reads a file.
set -uo pipefail

action_path="${GITHUB_ACTION_PATH:-$(cd "$(dirname "$0")/.." && pwd)}"
: "${RUNTIME_ACTION_CAPABILITY:?the 'capability' input is required}"
: "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set (not running in GitHub Actions?)}"

if [ "${RUNTIME_ACTION_SKIP_INSTALL:-}" != "1" ]; then
  venv="${RUNNER_TEMP:-/tmp}/runtime-action-venv"
  python3 -m venv "$venv" || exit 2
  "$venv/bin/pip" install --quiet "${RUNTIME_ACTION_INSTALL:-$action_path}" || exit 2
  PATH="$venv/bin:$PATH"
fi

# Steps that start a program run confined or not at all (bubblewrap and Landlock). A
# GitHub-hosted Ubuntu runner lacks bubblewrap, and Ubuntu 24.04 lets AppArmor refuse the
# unprivileged user namespaces it needs: with passwordless sudo (hosted runners have it)
# both are set up here. Elsewhere nothing is changed; `runtime doctor` says what is missing.
if [ "${RUNTIME_ACTION_SETUP_CONFINEMENT:-true}" = "true" ] && [ "$(uname -s)" = Linux ] \
  && sudo -n true 2>/dev/null; then
  if ! command -v bwrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    sudo -n apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null 2>&1 \
      || { sudo -n apt-get update -qq >/dev/null 2>&1 \
           && sudo -n apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null 2>&1; }
  fi
  if [ "$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null)" = 1 ]; then
    sudo -n sysctl -qw kernel.apparmor_restrict_unprivileged_userns=0 || true
  fi
fi

result_file="$(mktemp)"
words_file="$(mktemp)"
trap 'rm -f "$result_file" "$words_file"' EXIT

args=(--output json capability execute "$RUNTIME_ACTION_CAPABILITY")
if python3 "$action_path/action/inputs.py" "$words_file" "$result_file"; then
  while IFS= read -r -d '' word; do
    args+=(--input "$word")
  done < "$words_file"
  if [ -n "${RUNTIME_ACTION_ARGS:-}" ]; then
    read -r -a extra <<< "$RUNTIME_ACTION_ARGS"
    args+=("${extra[@]}")
  fi
  runtime "${args[@]}" > "$result_file"
  code=$?
else
  code=2  # the inputs could not be read; inputs.py wrote the error document
fi

# A random delimiter, so that no line of the JSON can end the multi-line output early.
delimiter="RUNTIME_RESULT_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
{
  echo "result<<$delimiter"
  cat "$result_file"
  echo "$delimiter"
  echo "exit-code=$code"
} >> "$GITHUB_OUTPUT"
cat "$result_file"
exit "$code"
