#!/usr/bin/env bash
# `make budget`: instructions and allocations per operation of the key
# scenarios, in a stripped release build of the benchmarks, against the
# budgets in Benchmarks/budgets.tsv. Fails when a scenario's instructions
# exceed its budget by more than 2%, or its allocations by any amount.
#
# Instructions come from callgrind, which counts them, not time: the same
# binary and inputs give the same count on a loaded machine. Each scenario
# runs twice (`benchmarks --count`), for N and 2N iterations; the
# difference divided by N operations leaves out the process's start, the
# set-up and the warm-up. Allocations come from the benchmarks' malloc
# interposer, the same way. Each line of the report also gives the
# scenario's reference (the C floor, a checked continuation's resume,
# withTaskCancellationHandler, swift-nio), measured the same way in the
# same run, and our ratio to it.
#
# `make budget-update` writes the measured figures into budgets.tsv: lower
# a budget in the change that earns it; raise one only with the reason in
# the commit.
set -euo pipefail
cd "$(dirname "$0")/.."
budgets=Benchmarks/budgets.tsv
update=${1:-}

if ! command -v valgrind >/dev/null; then
  SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
  $SUDO apt-get update && $SUDO apt-get install -y valgrind
fi
swift build -c release --product benchmarks >&2
bin=.build/budget-benchmarks
strip -o "$bin" .build/release/benchmarks

# Whose instructions count: the thread that runs the scenario's body (the
# process's first), so that the timer driver's and the firing pool's work,
# which valgrind interleaves differently from run to run, stays out of a
# figure that must repeat to 2%; all threads for the references that hand
# the body to another thread (a Task, swift-nio's loop).
all_threads="swift-concurrency nio-loop"

# measure SCENARIO IMPL N: prints "instructions/op allocations/op".
measure() {
  local out ir1 ir2 a1 a2 ops
  run() {
    rm -f "$tmp"/cg*
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg" "$bin" --count "$1" "$2" "$3" \
      2>"$tmp/err" >"$tmp/out" || { cat "$tmp/err" >&2; echo "budget: $1 / $2 failed" >&2; exit 1; }
    local files="$tmp/cg-01"
    case " $all_threads " in *" $2 "*) files="$tmp/cg-*";; esac
    # shellcheck disable=SC2086
    echo "$(awk '/^totals:/ { n += $2 } END { print n }' $files) $(cat "$tmp/out")"
  }
  read -r ir1 _ a1 <<<"$(run "$1" "$2" "$3")"
  read -r ir2 ops a2 <<<"$(run "$1" "$2" "$(($3 * 2))")"
  [ -n "$a1" ] && [ -n "$a2" ] || return 1
  # ops is 2N iterations' worth: the difference covers half of them.
  awk -v i1="$ir1" -v i2="$ir2" -v a1="$a1" -v a2="$a2" -v ops="$ops" \
    'BEGIN { n = ops / 2; printf "%.1f %.2f\n", (i2 - i1) / n, (a2 - a1) / n }'
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
echo "make budget: instructions and allocations per operation (callgrind, stripped release build; $cpu)"
printf '| %-36s | %12s | %12s | %7s | %9s | %9s | %-24s | %12s | %7s |\n' \
  scenario instructions budget change allocs budget reference "its instr." ours/ref
printf '|%s|\n' "--------------------------------------|--------------|--------------|---------|-----------|-----------|--------------------------|--------------|---------"
failed=0
: >"$tmp/new"
while IFS= read -r line; do
  case "$line" in '#'*|'') echo "$line" >>"$tmp/new"; continue;; esac
  IFS=$'\t' read -r scenario reference n budget_ir budget_allocs <<<"$line"
  read -r ir allocs <<<"$(measure "$scenario" lockfree "$n")"
  [ -n "$allocs" ] || { echo "budget: $scenario could not be measured" >&2; exit 1; }
  ref_ir=- ratio=-
  if [ "$reference" != - ]; then
    read -r ref_ir _ <<<"$(measure "$scenario" "$reference" "$n")"
    ratio=$(awk -v a="$ir" -v b="$ref_ir" 'BEGIN { printf "%.2fx", a / b }')
  fi
  verdict=$(awk -v ir="$ir" -v b="$budget_ir" -v al="$allocs" -v ba="$budget_allocs" \
    'BEGIN { printf "%+.1f%%", (ir / b - 1) * 100; if (ir > b * 1.02 || al > ba + 0.005) print " OVER" }')
  case "$verdict" in *OVER*) failed=1;; esac
  printf '| %-36s | %12s | %12s | %7s | %9s | %9s | %-24s | %12s | %7s |\n' \
    "$scenario" "$ir" "$budget_ir" "$verdict" "$allocs" "$budget_allocs" "$reference" "$ref_ir" "$ratio"
  printf '%s\t%s\t%s\t%s\t%s\n' "$scenario" "$reference" "$n" "$ir" "$allocs" >>"$tmp/new"
done <"$budgets"

if [ "$update" = --update ]; then
  cp "$tmp/new" "$budgets"
  echo "budget: wrote the measured figures to $budgets"
elif [ "$failed" = 1 ]; then
  echo "budget: a scenario is over its budget (instructions by more than 2%, or allocations)" >&2
  exit 1
fi
