#!/usr/bin/env bash
# Exhaustive model check of CSources/CCollapsingFutures/cf_core.c (cf_core.pml,
# link.pml) and cf_wheel.c (wheel.pml) with spin.
#
#   bash Model/run.sh           (make model)          every configuration must
#                                                     be proved: no error, search complete
#   bash Model/run.sh mutants   (make model-mutants)  every planted bug must be
#                                                     caught with a counterexample trail
#
# Generated files (pan.*, trails) go to Model/.out/ (git-ignored). Each spin
# verifier runs on one core; the whole `make model` takes about 3.7 minutes
# (the largest run, churn-wide, needs ~1.5 GB).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$here/.out
mode=${1:-check}

sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v spin >/dev/null 2>&1 || ! command -v gcc >/dev/null 2>&1; then
  echo "installing spin and gcc"
  sudo_if_needed apt-get update
  sudo_if_needed apt-get install -y spin gcc
fi

bash "$here/check-steps.sh"
mkdir -p "$out"

# name | spin -D flags | kind (safety / ltl) | extra pan flags
CONFIGS=(
  "race|-DCFG_RACE|safety|-w24"
  "immortal|-DCFG_IMMORTAL|safety|-w20"
  "nested1|-DCFG_NESTED1|safety|-w16"
  "nested2|-DCFG_NESTED2|safety|-w20"
  "churn|-DCFG_CHURN|safety|-w26"
  "churn-bound|-DCFG_CHURN -DNN=4 -DNP=2|safety|-w24"
  "churn-seq|-DCFG_CHURN_SEQ|safety|-w20"
  "churn-wide|-DCFG_CHURN_WIDE|safety|-w25 -m3000000"
  "churn-dcount|-DCFG_CHURN -DCHURN_DCOUNT|safety|-w24"
  "churn-seq-dcount|-DCFG_CHURN_SEQ -DCHURN_DCOUNT|safety|-w22"
  "progress|-DCFG_PROGRESS|ltl|-w22"
  "race-live|-DCFG_RACE -DLIVENESS|ltl|-w24"
  "nested2-live|-DCFG_NESTED2 -DLIVENESS|ltl|-w22"
  "cycle3-live|-DCFG_CYCLE3 -DLIVENESS|ltl|-w22"
  "cyclep2|-DCFG_CYCLEP2|safety|-w16"
  "cyclep3|-DCFG_CYCLEP3|safety|-w18"
  "cycle2|-DCFG_CYCLE2|safety|-w18"
  "cycle3|-DCFG_CYCLE3|safety|-w22"
  "chain|-DCFG_CHAIN|safety|-w20"
  "fset|-DCFG_FSET|safety|-w18"
  "link|-DCFG_LINK|safety|-w18"
  "link1|-DCFG_L1|safety|-w20|link.pml"
  "link2|-DCFG_L2|safety|-w20|link.pml"
  "link3|-DCFG_L3|safety|-w22|link.pml"
  "link4|-DCFG_L4|safety|-w20|link.pml"
  "link5|-DCFG_L5|safety|-w22|link.pml"
  "link6|-DCFG_L6|safety|-w20|link.pml"
  "wheel|-DCFG_W2|safety|-w22|wheel.pml"
  "wheel-seq|-DCFG_W2S|safety|-w21|wheel.pml"
  "wheel-seq-live|-DCFG_W2S -DLIVENESS|ltl|-w21|wheel.pml"
)

# name | configuration flags | mutant flag | what it mirrors
MUTANTS=(
  "claim-ls|-DCFG_RACE|-DMUT_CLAIM_LS|drain claims a node with a load then a store instead of a CAS"
  "fclaim-ls|-DCFG_FSET|-DMUT_FCLAIM_LS|cf_future_claim as a load then a store instead of a CAS"
  "clear-store|-DCFG_RACE|-DMUT_CLEAR_STORE|try_clean clears CLEANING with a plain store"
  "clear-noretry|-DCFG_PROGRESS|-DMUT_CLEAR_NORETRY|try_clean gives up when its clearing CAS fails"
  "settle-nowait|-DCFG_RACE|-DMUT_SETTLE_NOWAIT|cf_token_settle does not wait for a cleaner"
  "reg-drop-cleaning|-DCFG_RACE|-DMUT_REG_DROP_CLEANING|cf_token_register's CAS drops the CLEANING bit"
  "flat-acq|-DCFG_CYCLEP2|-DMUT_FLAT_ACQ|FLATTENING published with an acquire (not full) CAS: store buffering"
  "flat-acq-cycle2|-DCFG_CYCLE2|-DMUT_FLAT_ACQ|the same, in _trySetFuture as written (the walk follows the publication)"
  "flat-acq-cycle3|-DCFG_CYCLE3|-DMUT_FLAT_ACQ|the same, three futures"
  "flat-acq-chain|-DCFG_CHAIN|-DMUT_FLAT_ACQ|the same, closing a cycle through an existing chain"
  "prewalk-only|-DCFG_CYCLE2|-DMUT_PREWALK_ONLY|_setFuture forwards from the pre-walk's end without walking again after publishing FLATTENING"
  "free-first|-DCFG_RACE|-DMUT_FREE_FIRST|a node is freed on the first reference dropped"
  "lifo|-DCFG_RACE|-DMUT_LIFO|cf_token_settle queues the list without reversing it"
  "splice-after|-DCFG_NESTED1|-DMUT_SPLICE_AFTER|drain appends what a callback started after its later siblings"
  "no-clean|-DCFG_CHURN_SEQ|-DMUT_NO_CLEAN|cf_node_remove never calls try_clean"
  "no-recheck|-DCFG_CHURN -DNN=4 -DNP=2|-DMUT_NO_RECHECK|try_clean does not re-check the trigger after clearing CLEANING"
  "clean-giveup|-DCFG_CHURN -DNN=4 -DNP=2|-DMUT_CLEAN_GIVEUP|try_clean gives up when its CLEANING CAS fails (the old code)"
  "recheck-early|-DCFG_CHURN -DNN=4 -DNP=2|-DMUT_RECHECK_EARLY|try_clean loads dead for the re-check before clearing CLEANING"
  "min-one|-DCFG_PROGRESS|-DMUT_MIN_ONE|CF_CLEAN_MIN 1: a removed head alone meets the trigger"
  "dcount-norecheck|-DCFG_CHURN -DCHURN_DCOUNT|-DMUT_DCOUNT_NORECHECK|debug_count does not re-check the trigger after clearing CLEANING (the old code)"
  "link-store|-DCFG_LINK|-DMUT_LINK_STORE|cf_token_link as a load then a store instead of a CAS"
  "token-first|-DCFG_L1|-DMUT_TOKEN_FIRST|_link links the token before the claim CAS|link.pml"
  "no-fallback|-DCFG_L1|-DMUT_NO_FALLBACK|_link registers no forwarder when a handler came first|link.pml"
  "claim-link-store|-DCFG_L1|-DMUT_LINK_STORE|_link's claim CAS as a load then a store|link.pml"
  "no-taken|-DCFG_L2|-DMUT_NO_TAKEN|_takeClaimThrough does not mark the claim taken|link.pml"
  "no-resolve|-DCFG_L1|-DMUT_NO_RESOLVE|a registration does not resolve a linked token|link.pml"
  "no-abandon|-DCFG_L1|-DMUT_NO_ABANDON|deinit does not make an untaken link's root immortal|link.pml"
  "walk-no-link|-DCFG_L3|-DMUT_WALK_NO_LINK|_walk stops at a linked future instead of following its link|link.pml"
  "up-no-fallback|-DCFG_L6|-DMUT_UP_NO_FALLBACK|_linkInto registers no forwarder when a handler came first|link.pml"
  "up-untaken|-DCFG_L4|-DMUT_UP_UNTAKEN|_linkInto leaves the claim it names untaken|link.pml"
  "up-any-end|-DCFG_L5|-DMUT_UP_ANY_END|_linkInto links into any end of a walk, not only a root|link.pml"
  "up-not-fresh|-DCFG_L5|-DMUT_UP_NOT_FRESH|_linkInto also from a future others were linked into|link.pml"
  "check-early|-DCFG_W2S|-DMUT_CHECK_EARLY|the driver looks at the inbox before publishing its sleep tick|wheel.pml"
  "tick-nofence|-DCFG_W2S|-DMUT_TICK_NOFENCE|no full fence between publishing the sleep tick and the re-check (store buffering)|wheel.pml"
  "tick-nofence-sweep|-DCFG_W2|-DMUT_TICK_NOFENCE|the same fence, on the count's side (the mark stored, cancels loaded)|wheel.pml"
  "arm-early|-DCFG_W2S|-DMUT_ARM_EARLY|cf_deadline_arm without the fence after its push: the load of the sleep tick goes first|wheel.pml"
  "no-woken|-DCFG_W2|-DMUT_NO_WOKEN|the driver waits without the woken flag (a wake before the wait is lost)|wheel.pml"
  "cancel-store|-DCFG_W2|-DMUT_CANCEL_STORE|cf_deadline_cancel as a load of ARMED then a store instead of a CAS|wheel.pml"
  "fire-store|-DCFG_W2|-DMUT_FIRE_STORE|the driver fires with a load then a store instead of a CAS|wheel.pml"
  "take-store|-DCFG_W2S|-DMUT_TAKE_STORE|take_inbox as a load then a store of 0 instead of a CAS|wheel.pml"
  "no-count-recheck|-DCFG_W2|-DMUT_NO_COUNT_RECHECK|the driver clears sweep_wanted and sleeps without re-checking the count|wheel.pml"
  "cancel-nofence|-DCFG_W2|-DMUT_CANCEL_NOFENCE|cf_deadline_cancel without the fence after its add: the load of the mark goes first|wheel.pml"
)

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# verify <dir> <spin flags> <kind> <pan flags>: builds and runs one verifier in
# <dir>; leaves pan.out there and sets VERIFY_ERRORS, VERIFY_SUMMARY.
verify() {  # dir, spin flags, safety|ltl, pan flags, model file (cf_core.pml)
  local dir=$1 flags=$2 kind=$3 panflags=$4 model=${5:-cf_core.pml}
  rm -rf "$dir"; mkdir -p "$dir"
  cp "$here/$model" "$dir/"
  (cd "$dir" && spin -a $flags "$model" >spin.out 2>&1) || { cat "$dir/spin.out" >&2; return 2; }
  # COLLAPSE: lossless state compression (the largest run needs ~1.5 GB)
  local cc=(gcc -O2 -DVECTORSZ=4096 -DCOLLAPSE -DMEMLIM=6144 -w -o pan pan.c)
  local run=(./pan -m1000000 $panflags)
  if [ "$kind" = safety ]; then
    cc+=(-DSAFETY)
  else
    cc+=(-DNFAIR=3)
    run+=(-a -f)               # acceptance cycles under weak fairness
  fi
  local t0 t1 t2
  t0=$(now)
  (cd "$dir" && "${cc[@]}" 2>gcc.err) || { cat "$dir/gcc.err" >&2; return 2; }
  t1=$(now)
  (cd "$dir" && "${run[@]}" >pan.out 2>&1) || true
  t2=$(now)
  local p=$dir/pan.out
  VERIFY_ERRORS=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$p" | tail -1)
  [ -n "$VERIFY_ERRORS" ] || { echo "no result from pan in $dir" >&2; tail -5 "$p" >&2; return 2; }
  VERIFY_INCOMPLETE=""
  if grep -Eq 'max search depth too small|out of memory|MEMLIM|[Ss]earch not completed|aborted' "$p"; then
    VERIFY_INCOMPLETE=$(grep -Eo 'max search depth too small|out of memory|MEMLIM bound|[Ss]earch not completed|aborted' "$p" | head -1)
  fi
  local stored trans depth vec pansec
  stored=$(awk '/states, stored/ { print $1; exit }' "$p")
  trans=$(awk '/transitions \(= / { print $1; exit }' "$p")
  depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$p" | head -1)
  vec=$(sed -n 's/^State-vector \([0-9]*\) byte.*/\1/p' "$p" | head -1)
  pansec=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\) seconds.*/\1/p' "$p" | tail -1)
  VERIFY_SUMMARY=$(printf 'states %9s  transitions %9s  depth %6s  pan %5ss  (compile %4ss)' \
    "$stored" "$trans" "$depth" "${pansec:-?}" "$(secs "$t0" "$t1")")
}

# A witness run (dir, spin flags, pan flags, model, the witness assertion as
# pan reports it, what to print when reached, what was not reached): it
# must fail on the witness assertion, not on a property; otherwise the run
# fails.
reach() {
  local dir=$1 flags=$2 panflags=$3 model=$4 pattern=$5 ok=$6 missed=$7
  if verify "$dir" "$flags" safety "$panflags" "$model"; then
    if [ "$VERIFY_ERRORS" != 0 ] && grep -q "$pattern" "$dir/pan.out"; then
      echo "$ok"
    else
      echo "FAIL  $missed: see Model/README.md"; status=1
    fi
  else
    status=1
  fi
}

cfg_name() {  # the CONFIGS name of a set of spin flags
  local c name flags rest
  for c in "${CONFIGS[@]}"; do
    IFS='|' read -r name flags rest <<<"$c"
    [ "$flags" = "$1" ] && { echo "$name"; return; }
  done
  echo "$1"
}

first_error() {  # the property spin reports violated
  grep -m1 -E '^pan:1: |acceptance cycle|invalid end state|assertion violated' "$1/pan.out" | sed 's/^pan:1: //'
}

start=$(now)
status=0
case "$mode" in
check)
  echo "== spin: $(spin -V | head -1)"
  for c in "${CONFIGS[@]}"; do
    IFS='|' read -r name flags kind panflags model <<<"$c"
    model=${model:-cf_core.pml}
    verify "$out/$name" "$flags" "$kind" "$panflags" "$model" || { echo "FAIL  $name: could not build the verifier"; status=1; continue; }
    if [ "$VERIFY_ERRORS" != 0 ]; then
      echo "FAIL  $(printf '%-12s' "$name") $(first_error "$out/$name") (trail: ${out#$here/}/$name/$model.trail)"; status=1
    elif [ -n "$VERIFY_INCOMPLETE" ]; then
      echo "FAIL  $(printf '%-12s' "$name") search incomplete: $VERIFY_INCOMPLETE"; status=1
    else
      echo "ok    $(printf '%-12s' "$name") $VERIFY_SUMMARY"
    fi
  done
  # P6 is tight (Model/README.md, "List length"): spin must reach a quiescent
  # state with exactly the bound removed but linked, once with each term of
  # max(CLEAN_MIN - 1, last_len / 2) the larger. This does not fail the run.
  for wit in "1|churn-bound|-DCFG_CHURN -DNN=4 -DNP=2|CLEAN_MIN - 1|-w22" \
             "2|churn-wide|-DCFG_CHURN_WIDE|last_len / 2|-w22 -m3000000"; do
    IFS='|' read -r w name flags term panflags <<<"$wit"
    if verify "$out/tight-$name" "$flags -DLEN_WITNESS=$w" safety "$panflags"; then
      # the witness is the monitor's assert(false), not a P6 failure
      if [ "$VERIFY_ERRORS" != 0 ] && grep -q '^pan:1: assertion violated 0 ' "$out/tight-$name/pan.out"; then
        echo "P6 is tight ($name): a quiescent state holds exactly max(...) = $term removed-but-linked nodes, as documented"
      else
        echo "NOTE  $name never reaches P6's bound with $term the larger term: update Model/README.md"
      fi
    else
      status=1
    fi
  done
  # The chain configuration must exercise what it is for (Model/README.md,
  # "Configurations"): an end state where future 0's pre-walk went through
  # the existing chain 1 -> 2 and its forwarder went on 2's token, once in
  # the cycle outcome (1) and once in the completed one (2). A missing
  # witness fails the run.
  for w in 1 2; do
    reach "$out/reach-chain-$w" "-DCFG_CHAIN -DCHAIN_WITNESS=$w" "-w20" cf_core.pml \
      '^pan:1: assertion violated .*target\[0\]==3' \
      "chain reaches its case $w: future 0 targets and forwards from the chain's end ($([ $w = 1 ] && echo cycle || echo completed))" \
      "chain never reaches case $w (future 0 forwarding from the chain's end)"
  done
  # The link configurations must reach what they are for: an end state
  # where the producer's value reached X through 1 (link1) and 2 (link2: Y
  # into X, then Z into X through Y's claim) links.
  for w in 1 2; do
    reach "$out/reach-link$w" "-DCFG_L$w -DWITNESS=$w" "-w20" link.pml \
      '^pan:1: assertion violated .*nlink>=' \
      "link$w reaches $w link(s) completing X with the producer's value" \
      "link$w never completes X through $w link(s)"
  done
  # link4 must reach a token linked into a root by _linkInto with the
  # producer's value arriving.
  reach "$out/reach-link4" "-DCFG_L4 -DWITNESS=1" "-w20" link.pml \
    '^pan:1: assertion violated .*nlink>=' \
    "link4 reaches a token linked into a root (_linkInto) with the producer's value" \
    "link4 never links a token into a root"
  # link6 must reach a chain built outwards flat: Y and Z both linked into
  # X, still unset when they linked, with the producer's value arriving.
  reach "$out/reach-link6" "-DCFG_L6 -DWITNESS=1" "-w20" link.pml \
    '^pan:1: assertion violated .*nlink>=' \
    "link6 reaches a chain built outwards with both levels linked into its unset root" \
    "link6 never links both levels of an outward chain into its root"
  # link5 must reach what it is for: a root others were linked into set
  # again, through its claim, to a chain ending at another root.
  reach "$out/reach-link5" "-DCFG_L5 -DWITNESS=1" "-w22" link.pml \
    '^pan:1: assertion violated .*reroot' \
    "link5 reaches a root set again to a chain ending at another root" \
    "link5 never sets a root again to another root's chain"
  ;;
mutants)
  killed=0; survived=0
  for m in "${MUTANTS[@]}"; do
    IFS='|' read -r name cfg flag what model <<<"$m"
    model=${model:-cf_core.pml}
    kind=safety; [ "$cfg" = -DCFG_PROGRESS ] && kind=ltl
    verify "$out/mut-$name" "$cfg $flag" "$kind" "-w22" "$model" || { echo "FAIL  $name: could not build the verifier"; status=1; continue; }
    replay=""
    if [ "$VERIFY_ERRORS" != 0 ] && [ -f "$out/mut-$name/$model.trail" ]; then
      # the counterexample replays in spin's simulator
      replay=$(cd "$out/mut-$name" && spin -t $cfg $flag "$model" 2>&1 \
               | grep -E 'assertion violated|START OF CYCLE|trail ends after' | tr '\n' ' ' || true)
    fi
    if [[ "$replay" =~ (assertion violated|START OF CYCLE).*trail\ ends\ after\ ([0-9]+) ]]; then
      killed=$((killed + 1))
      printf 'killed    %-18s %-12s %s\n          %s; trail of %s steps\n' "$name" "$(cfg_name "$cfg")" \
        "$(first_error "$out/mut-$name")" "$what" "${BASH_REMATCH[2]}"
    else
      survived=$((survived + 1)); status=1
      printf 'SURVIVED  %-18s %-12s %s\n' "$name" "$(cfg_name "$cfg")" "$what"
    fi
  done
  echo "mutants: $killed killed, $survived survived"
  ;;
*)
  echo "usage: $0 [mutants]" >&2; exit 2 ;;
esac
echo "total $(secs "$start" "$(now)") s"
exit $status
