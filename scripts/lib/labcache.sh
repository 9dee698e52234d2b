# shellcheck shell=bash
# The arm64 lab's cached builds (scripts/kernel-lab-arm64: the root; scripts/epics-arm64: EPICS base), sourced by
# both (docs/kernel-lab.md, "A cache that is missing, full or half-built"). Every failure is one line naming its
# cause and the log, never the log's tail; a build is made in a staging folder on the cache's own file system and
# renamed into place when whole, its recipe stamp written last, so what an interrupted or failed build leaves is
# never used: the next run removes it and builds again.
# The caller sets lc_name (the message prefix) and lc_cache (the cache folder).

lc_die() { echo "$lc_name: $1" >&2; exit "${2:-1}"; }

# lc_status STAMP RECIPE FILE...: 0 (silent) when every FILE (relative to lc_cache) is there and the file STAMP
# holds RECIPE; else one line saying why on stdout and 2.
lc_status() {
  local stamp=$1 recipe=$2 f; shift 2
  [ -e "$stamp" ] || { echo "$lc_name: cold: no $stamp (never built, or a build did not finish)"; return 2; }
  for f; do
    [ -e "$lc_cache/$f" ] || { echo "$lc_name: cold: $lc_cache/$f is missing"; return 2; }
  done
  [ "$(cat "$stamp" 2>/dev/null)" = "$recipe" ] || { echo "$lc_name: stale: built from another recipe ($stamp)"; return 2; }
  return 0
}

# lc_need_space DIR MB WHAT: one line and exit 1 when DIR's file system has less than MB megabytes free.
lc_need_space() {
  local dir=$1 need=$2 what=$3 free
  free=$(df -Pm "$dir" 2>/dev/null | awk 'NR == 2 { print $4 }')
  [[ "$free" =~ ^[0-9]+$ ]] || return 0
  [ "$free" -ge "$need" ] \
    || lc_die "$what needs about $need MB free in $dir and there are $free MB: free some space (nothing was built)" 1
}

# lc_fail LOG WHAT [CODE]: WHAT failed; one line with the cause found in LOG and LOG's path, exit CODE (default 1);
# a full disk is named as such and exits 1 (a failure to mend, never "cannot build here").
lc_fail() {
  local log=$1 what=$2 code=${3:-1} cause
  if grep -aqi 'no space left on device' "$log" 2>/dev/null; then
    lc_die "$what failed: the disk is full (No space left on device; log: $log)" 1
  fi
  cause=$(grep -a -E '^E: |[Ee]rror|[Ff]ailed|[Cc]annot|not found' "$log" 2>/dev/null | tail -1 | tr -cd '[:print:]' | cut -c1-160 || true)
  lc_die "$what failed${cause:+: $cause} (log: $log)" "$code"
}

# lc_stage: a new staging folder, $lc_staging (lc_cache/.build.PID), after removing the ones builds that were
# killed left (their process gone). The staging folder goes on exit, and an interrupt is one line.
# The caller holds lc_lock, so no other build of this cache runs meanwhile.
lc_stage() {
  local d pid
  for d in "$lc_cache"/.build.*; do
    [ -d "$d" ] || continue
    pid=${d##*.build.}
    [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && continue
    echo "$lc_name: removing what an interrupted build left ($d)" >&2
    # a build killed inside mmdebstrap may leave its root's /proc, /sys, /dev mounted there: unmounted first
    findmnt -rn -o TARGET 2>/dev/null | grep -F "$d/" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done || true
    rm -rf --one-file-system "$d" 2>/dev/null || lc_die "cannot remove $d (what an interrupted build left): remove it by hand" 1
  done
  lc_staging=$lc_cache/.build.$BASHPID
  mkdir -p "$lc_staging"
  # shellcheck disable=SC2064 # the folder is fixed now
  trap "rm -rf --one-file-system '$lc_staging'" EXIT
  trap 'lc_die "interrupted: nothing half-built is kept, the next run builds it again" 130' INT TERM HUP
}

# lc_lock: one build of this cache at a time (a second waits, then finds the cache built).
lc_lock() {
  exec {lc_lock_fd}>"$lc_cache/.build-lock"
  flock "$lc_lock_fd"
}

lc_unlock() { [ -z "${lc_lock_fd:-}" ] || exec {lc_lock_fd}>&-; lc_lock_fd=""; }

# lc_commit STAMP RECIPE NAME...: each staged NAME (a file or folder in lc_staging) renamed into lc_cache, then
# RECIPE written into STAMP, last. STAMP is removed first: if this is stopped half-way the cache is cold.
lc_commit() {
  local stamp=$1 recipe=$2 f; shift 2
  rm -f "$stamp"
  for f; do
    rm -rf --one-file-system "${lc_cache:?}/$f"
    mv -T "$lc_staging/$f" "$lc_cache/$f"
  done
  echo "$recipe" >"$stamp.new" && mv -f "$stamp.new" "$stamp"
}
