# hermes death supervisor. Run as: sh -c SCRIPT hermes-supervisor GRACE_MS OWNER_PGID CGBASE CGOWN
# (CGBASE: cgroup dirs must be below it; CGOWN: the owner's subtree, removed at exit; - for none)
# stdin is the read end of the owner's death pipe. Lines (<= 256 bytes):
#   R ID PGID LEADER START KEY CGROUP  register or replace ID (PGID 0: cgroup only;
#                                      START 0: no leader to check; KEY, CGROUP: - for none)
#   U ID                               unregister ID
# Anything else is ignored. At EOF: TERM every registered group, wait up to
# GRACE_MS for all to be empty, KILL what is left, remove the cgroups, exit.
set -f
trap '' HUP INT QUIT TSTP TTIN TTOU PIPE
grace=$1 opg=$2 base=$3 own=$4 me=$$ ids=' '
num() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }
while IFS= read -r l; do
  [ ${#l} -le 256 ] || continue
  # shellcheck disable=SC2086 # splitting the line into fields is the point
  set -- $l
  case $1 in
  R)
    if ! { [ $# -eq 7 ] && num "$3" && num "$4" && num "$5"; }; then continue; fi
    case $2 in '' | *[!A-Za-z0-9_]*) continue ;; esac
    case $6 in - | [A-Za-z0-9_]*) ;; *) continue ;; esac
    case $6 in *[!A-Za-z0-9_-]*) continue ;; esac
    case $7 in -) [ "$3" -gt 1 ] || continue ;; "$base"/*) ;; *) continue ;; esac
    case $7 in *..*) continue ;; esac
    if [ "$3" -eq "$me" ] || [ "$3" -eq "$opg" ] || [ "$3" -eq 1 ]; then continue; fi
    eval "g_$2=\$l"
    case $ids in *" $2 "*) ;; *) ids="$ids$2 " ;; esac
    ;;
  U)
    [ $# -eq 2 ] || continue
    case $2 in '' | *[!A-Za-z0-9_]*) continue ;; esac
    case $ids in *" $2 "*) ids="${ids%% "$2" *} ${ids#* "$2" }" ;; esac
    unset "g_$2"
    ;;
  esac
done

# same PID START: true unless PID is alive with another start time (recycled).
same() {
  [ "$2" = 0 ] && return 0
  s=
  read -r s <"/proc/$1/stat" 2>/dev/null || return 0
  t=$2
  # shellcheck disable=SC2086 # fields after the command name
  set -- ${s##*) }
  [ "${20}" = "$t" ]
}

# hit SIG: send SIG to every registered group that is not empty, and to the
# escapees found by the last sweep; left=1 if anything was alive.
hit() {
  sig=$1 left=0
  for id in $ids; do
    eval "set -- \$g_$id"
    if [ "$7" != - ]; then
      e=
      while read -r k v; do [ "$k" = populated ] && e=$v; done 2>/dev/null <"$7/cgroup.events"
      [ "$e" = 1 ] || continue
      left=1
      if [ "$sig" = KILL ]; then
        echo 1 2>/dev/null >"$7/cgroup.kill"
      else
        while read -r p; do kill -s "$sig" "$p" 2>/dev/null; done 2>/dev/null <"$7/cgroup.procs"
      fi
    else
      kill -s 0 -- "-$3" 2>/dev/null || continue
      same "$4" "$5" || continue
      left=1
      kill -s "$sig" -- "-$3" 2>/dev/null
    fi
  done
  for p in $esc; do kill -s "$sig" "$p" 2>/dev/null && left=1; done
}

# sweep: esc=pids of live processes that carry the spawn key of a registered
# group without a cgroup (escapees of their process group the owner never saw).
sweep() {
  keys='' esc=''
  for id in $ids; do
    eval "set -- \$g_$id"
    [ "$7" = - ] && [ "$6" != - ] && keys="$keys|$6"
  done
  [ -n "$keys" ] || return 0
  set +f
  # shellcheck disable=SC2013 # grep prints /proc/PID/environ paths: plain words
  for f in $(grep -lzE "^HERMES_SPAWN=(${keys#|})\$" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/} p=${p%/environ}
    [ "$p" = "$me" ] || esc="$esc $p"
  done
  set -f
}

now() { read -r u _ </proc/uptime; c=${u%.*}${u#*.}; c=${c#"${c%%[!0]*}"}; }

esc=
sweep
hit TERM
if [ "$left" = 1 ]; then
  now
  end=$((${c:-0} + grace / 10))
  while :; do
    sleep 0.01
    hit 0
    [ "$left" = 1 ] || break
    now
    [ "${c:-0}" -lt "$end" ] || break
  done
  if [ "$left" = 1 ]; then
    sweep
    hit KILL
    n=0
    while [ "$left" = 1 ] && [ $n -lt 100 ]; do
      sleep 0.01
      hit 0
      n=$((n + 1))
    done
  fi
fi
for id in $ids; do
  eval "set -- \$g_$id"
  [ "$7" = - ] || rmdir "$7" 2>/dev/null
done
[ "$own" = - ] || rmdir "$own" 2>/dev/null
exit 0
