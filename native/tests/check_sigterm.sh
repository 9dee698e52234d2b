#!/usr/bin/env bash
# ctest: SIGTERM at a random moment (before the header, just after it, mid-run) ends the event
# probe within a second, with its end record once the header is out (exit 4 "interrupted", or 0
# when the run had already completed). Before the header the default action may end it (exit
# 143, nothing written). Each source and stimulus kind in turn; the seed is printed so a failure
# can be replayed with RTQUAL_SIGTERM_SEED=N.
# usage: check_sigterm.sh PROBE [EMULATOR WORDS...]
set -u
probe=$1
shift
emulator=("$@")
seed=${RTQUAL_SIGTERM_SEED:-$$}
RANDOM=$seed
rounds=${RTQUAL_SIGTERM_ROUNDS:-9}
limit_ms=1000
out=$(mktemp)
trap 'rm -f "$out"' EXIT
kinds=("--source eventfd" "--source fifo --stimulus process" "--source timerfd")
echo "check_sigterm: seed $seed, $rounds rounds"
fail=0
for ((i = 0; i < rounds; i++)); do
  kind=${kinds[i % ${#kinds[@]}]}
  case $(((i / ${#kinds[@]}) % 3)) in # around start-up and the header, early in the run, later
    0) delay_ms=$((RANDOM % 150)) ;;
    1) delay_ms=$((150 + RANDOM % 450)) ;;
    *) delay_ms=$((600 + RANDOM % 900)) ;;
  esac
  # 3000 stimuli at 1 kHz: a 3 s run, so every delay falls before its end
  # shellcheck disable=SC2086
  "${emulator[@]}" "$probe" event $kind --rate 1000 --loops 3000 --warmup 10 --policy other --allow-degraded \
    >"$out" 2>/dev/null &
  pid=$!
  sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
  kill -TERM "$pid" 2>/dev/null
  waited_ms=0
  while kill -0 "$pid" 2>/dev/null && ((waited_ms < limit_ms)); do
    sleep 0.02
    waited_ms=$((waited_ms + 20))
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    echo "FAIL round $i ($kind, SIGTERM at ${delay_ms} ms): still running ${limit_ms} ms after SIGTERM"
    fail=1
    continue
  fi
  wait "$pid"
  rc=$?
  header=$(grep -c '"type":"header"' "$out")
  last=$(tail -n 1 "$out")
  verdict=ok
  if ((header > 0)); then
    [[ $rc == 0 || $rc == 4 ]] || verdict="exit $rc after the header"
    [[ $last == *'"type":"end"'* ]] || verdict="no end record after the header (exit $rc)"
  else
    [[ $rc == 143 || $rc == 4 ]] || verdict="exit $rc before the header"
  fi
  echo "round $i: $kind, SIGTERM at ${delay_ms} ms, ended within ${waited_ms} ms, exit $rc, header $header: $verdict"
  [[ $verdict == ok ]] || fail=1
done
exit $fail
