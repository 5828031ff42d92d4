#!/usr/bin/env bash
# Checks the step table in cf_core.pml against cf_core.c.
#
# Each table line ` * @step <id> | <C function> | <snippet>` must name a
# snippet found on exactly one line inside that function of cf_core.c (a
# snippet starting with ^ must start the trimmed line); prints
# `<id> -> cf_core.c:LINE`. Also checks that every <id> marks a model step
# (`@<id>` in a comment of the model body), that every `@marker` in the body
# is in the table, and that every atomic operation of cf_core.c (an AO_load*,
# AO_store*, AO_*compare_and_swap*, AO_fetch_and_add* call) is a step.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
model=$here/cf_core.pml
csrc=${CF_CORE_C:-$here/../CSources/CCollapsingFutures/cf_core.c}
[ -f "$csrc" ] || { echo "check-steps: $csrc not found" >&2; exit 1; }

trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; s=${s%"${s##*[![:space:]]}"}; printf '%s' "$s"; }

fail=0
declare -A covered=()
# the model proper: everything after the header comment
body=$(awk 'seen { print } /^ \*\// { seen = 1 }' "$model")
while IFS= read -r row; do
  row=${row#*@step }
  id=$(trim "${row%%|*}"); rest=${row#*|}
  func=$(trim "${rest%%|*}"); snip=$(trim "${rest#*|}")
  # the function: a definition starting in column 0, up to the first `}` in column 0
  start=$(F="$func" awk '$0 ~ /^[A-Za-z_]/ && $0 ~ /\{[ \t]*$/ && index($0, ENVIRON["F"] "(") { n = index($0, ENVIRON["F"] "("); c = substr($0, n - 1, 1); if (n == 1 || c == " " || c == "*") { print NR; exit } }' "$csrc")
  if [ -z "$start" ]; then echo "check-steps: $id: function $func not found in cf_core.c" >&2; fail=1; continue; fi
  end=$(awk -v s="$start" 'NR > s && /^}/ { print NR; exit }' "$csrc")
  anchored=0
  if [ "${snip:0:1}" = "^" ]; then anchored=1; snip=${snip:1}; fi
  lines=$(S="$snip" A="$anchored" awk -v s="$start" -v e="$end" '
    NR >= s && NR <= e {
      t = $0; sub(/^[ \t]+/, "", t)
      if (ENVIRON["A"] == "1" ? index(t, ENVIRON["S"]) == 1 : index($0, ENVIRON["S"]) > 0) print NR
    }' "$csrc")
  count=$(printf '%s' "$lines" | grep -c . || true)
  if [ "$count" -ne 1 ]; then
    echo "check-steps: $id: snippet found $count times in $func (lines $start-$end): $snip" >&2; fail=1; continue
  fi
  if ! grep -Eq "@$id([^A-Za-z0-9_]|$)" <<<"$body"; then
    echo "check-steps: $id: no model step is marked @$id" >&2; fail=1
  fi
  covered[$lines]=1
  printf '%-15s -> cf_core.c:%-4s %s\n' "$id" "$lines" "$func"
done < <(grep '^ \* @step ' "$model")

# every @marker used in the model body is in the table
for m in $(grep -o '@[a-z_]\+' <<<"$body" | sort -u); do
  grep -q "^ \* @step ${m#@} " "$model" || { echo "check-steps: model marker $m is not in the step table" >&2; fail=1; }
done
# every atomic operation of cf_core.c is a step
while IFS=: read -r n _; do
  [ -n "${covered[$n]:-}" ] || { echo "check-steps: cf_core.c:$n has an atomic operation no step names: $(sed -n "${n}p" "$csrc" | sed 's/^ *//')" >&2; fail=1; }
done < <(grep -nE 'AO_(int_)?(load|store|fetch_compare_and_swap|compare_and_swap|fetch_and_add)[a-z0-9_]*\(' "$csrc")

if [ "$fail" -ne 0 ]; then echo "check-steps: FAILED" >&2; exit 1; fi
echo "check-steps: ${#covered[@]} steps match cf_core.c"
