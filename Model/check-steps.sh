#!/usr/bin/env bash
# Checks the step tables of the models against the C sources:
# cf_core.pml against cf_core.c, wheel.pml against cf_wheel.c,
# cf_wheel_slots.c and cf_deadline.c.
#
# Each table line ` * @step <id> | <C function> | <snippet>` must name a
# snippet found on exactly one line inside that function of the C files (the
# function is looked for in every file of the model, and must be defined in
# one; `file.c:function` names a static function of that file; a
# snippet starting with ^ must start the trimmed line; a snippet `A >> B`
# names the first line containing B after the one line containing A, for a
# line such as `AO_nop_full();` that occurs more than once, and no two such
# steps may name the same line, so that B gone from its place is not
# silently found further down); prints `<id> -> <file>:LINE`. Also checks
# that every <id> marks a model step (`@<id>` in a comment of the model
# body), that every `@marker` in the body is in the table, and that every
# atomic operation of the model's C files (an AO_load*, AO_store*,
# AO_*compare_and_swap*, AO_fetch_and_add*, AO_nop* call) is a step.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
csrc_dir=$here/../CSources/CCollapsingFutures

trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; s=${s%"${s##*[![:space:]]}"}; printf '%s' "$s"; }

# the one line in start..end of $csrc containing the snippet (anchored: at
# the start of the trimmed line), from line `from` on; prints the line
# numbers found
find_lines() {  # csrc start end from anchored snippet
  S="$6" A="$5" awk -v s="$2" -v e="$3" -v f="$4" '
    NR >= s && NR <= e && NR >= f {
      t = $0; sub(/^[ \t]+/, "", t)
      if (ENVIRON["A"] == "1" ? index(t, ENVIRON["S"]) == 1 : index($0, ENVIRON["S"]) > 0) print NR
    }' "$1"
}

# the line where `func` is defined in $1: a definition starting in column 0
# whose first `(` follows its name, with `{` ending the line, or a one-line
# definition `... name(...) { ... }`
def_line() {  # csrc func
  F="$2" awk '$0 ~ /^[A-Za-z_]/ && ($0 ~ /\{[ \t]*$/ || $0 ~ /\{.*\}[ \t]*$/) && index($0, ENVIRON["F"] "(") {
      n = index($0, ENVIRON["F"] "("); c = substr($0, n - 1, 1)
      if ((n == 1 || c == " " || c == "*") && index($0, "(") == n + length(ENVIRON["F"])) { print NR; exit } }' "$1"
}

fail=0
check() {  # model file, C files
  local model=$1; shift
  local files=("$@") csrc name f
  for f in "${files[@]}"; do
    [ -f "$f" ] || { echo "check-steps: $f not found" >&2; fail=1; return; }
  done
  declare -A covered=() arrowed=()
  local body row id rest func snip start end anchored lines count after from where
  # the model proper: everything after the header comment
  body=$(awk 'seen { print } /^ \*\// { seen = 1 }' "$model")
  while IFS= read -r row; do
    row=${row#*@step }
    id=$(trim "${row%%|*}"); rest=${row#*|}
    func=$(trim "${rest%%|*}"); snip=$(trim "${rest#*|}")
    # the file that defines the function (up to the first `}` in column 0)
    csrc=""; start=""; where=""; count=0
    if [[ "$func" == *.c:* ]]; then where=${func%%:*}; func=${func#*:}; fi
    for f in "${files[@]}"; do
      [ -z "$where" ] || [ "$(basename "$f")" = "$where" ] || continue
      n=$(def_line "$f" "$func")
      [ -n "$n" ] || continue
      count=$((count + 1)); csrc=$f; start=$n
    done
    name=$(basename "${csrc:-none}")
    if [ "$count" -gt 1 ]; then echo "check-steps: $id: $func is defined in more than one file: name it (file.c:$func)" >&2; fail=1; continue; fi
    if [ -z "$start" ]; then echo "check-steps: $id: function $func not found in ${where:-$(for f in "${files[@]}"; do basename "$f"; done | paste -sd' ')}" >&2; fail=1; continue; fi
    if sed -n "${start}p" "$csrc" | grep -Eq '\}[[:space:]]*$'; then
      end=$start
    else
      end=$(awk -v s="$start" 'NR > s && /^}/ { print NR; exit }' "$csrc")
    fi
    after=""
    case "$snip" in *" >> "*) after=$(trim "${snip#* >> }"); snip=$(trim "${snip%% >> *}") ;; esac
    anchored=0
    if [ "${snip:0:1}" = "^" ]; then anchored=1; snip=${snip:1}; fi
    lines=$(find_lines "$csrc" "$start" "$end" "$start" "$anchored" "$snip")
    count=$(printf '%s' "$lines" | grep -c . || true)
    if [ "$count" -ne 1 ]; then
      echo "check-steps: $id: snippet found $count times in $func (lines $start-$end): $snip" >&2; fail=1; continue
    fi
    if [ -n "$after" ]; then
      from=$lines
      lines=$(find_lines "$csrc" "$start" "$end" $((from + 1)) 0 "$after" | head -1)
      if [ -z "$lines" ]; then
        echo "check-steps: $id: no line after $name:$from in $func contains: $after" >&2; fail=1; continue
      fi
      if [ -n "${arrowed[$name:$lines]:-}" ]; then
        echo "check-steps: $id and ${arrowed[$name:$lines]} both name $name:$lines: $after" >&2; fail=1; continue
      fi
      arrowed[$name:$lines]=$id
    fi
    if ! grep -Eq "@$id([^A-Za-z0-9_]|$)" <<<"$body"; then
      echo "check-steps: $id: no model step is marked @$id" >&2; fail=1
    fi
    covered[$name:$lines]=1
    printf '%-15s -> %s:%-4s %s\n' "$id" "$name" "$lines" "$func"
  done < <(grep '^ \* @step ' "$model")

  # every @marker used in the model body is in the table
  local m n
  for m in $(grep -o '@[a-z_]\+' <<<"$body" | sort -u); do
    grep -q "^ \* @step ${m#@} " "$model" || { echo "check-steps: $(basename "$model"): marker $m is not in the step table" >&2; fail=1; }
  done
  # every atomic operation of the C files is a step
  for f in "${files[@]}"; do
    name=$(basename "$f")
    while IFS=: read -r n _; do
      [ -n "${covered[$name:$n]:-}" ] || { echo "check-steps: $name:$n has an atomic operation no step names: $(sed -n "${n}p" "$f" | sed 's/^ *//')" >&2; fail=1; }
    done < <(grep -nE 'AO_(int_)?(load|store|fetch_compare_and_swap|compare_and_swap|fetch_and_add|nop)[a-z0-9_]*\(' "$f")
  done
  echo "check-steps: ${#covered[@]} steps match $(for f in "${files[@]}"; do basename "$f"; done | paste -sd' ' | sed 's/ / and /g')"
}

check "$here/cf_core.pml" "${CF_CORE_C:-$csrc_dir/cf_core.c}"
check "$here/wheel.pml" "${CF_WHEEL_C:-$csrc_dir/cf_wheel.c}" "${CF_WHEEL_SLOTS_C:-$csrc_dir/cf_wheel_slots.c}" \
  "${CF_DEADLINE_C:-$csrc_dir/cf_deadline.c}"

if [ "$fail" -ne 0 ]; then echo "check-steps: FAILED" >&2; exit 1; fi
