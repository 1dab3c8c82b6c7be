# hermes death supervisor. Run as: sh -c SCRIPT hermes-supervisor GRACE_MS OWNER_PGID CGBASE CGOWN
# (CGBASE: every cgroup dir is below it; CGOWN: the owner's subtree, removed
# at the owner's death; - for none)
# stdin is the read end of the owner's death pipe. Lines (<= 256 bytes):
#   R ID PGID LEADER START KEY CG  register or replace ID (PGID 0: cgroup only;
#                                  START 0: no leader to check; KEY: - for none;
#                                  CG: - for none, else the cgroup dir relative
#                                  to CGBASE, each byte outside [A-Za-z0-9._/-]
#                                  written \0ooo, as printf %b reads it)
#   U ID                           unregister ID
#   I                              the owner closes the pipe because nothing is
#                                  registered: at EOF, CGOWN is left in place
# stdout is the reply pipe: every line read gets one reply, in order:
#   A ID                           accepted (ID - for I)
#   N ID REASON...                 refused, nothing changed (ID - when unreadable)
# At EOF: TERM every registered group, wait up to GRACE_MS for all to be
# empty, KILL what is left, remove the cgroups, exit.
set -f
trap '' HUP INT QUIT TSTP TTIN TTOU PIPE
grace=$1 opg=$2 base=$3 own=$4 me=$$ ids=' ' idle=0 cg=-
num() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }
no() { echo "N $rid $*"; }
while IFS= read -r l; do
  rid=-
  if [ ${#l} -gt 256 ]; then no line longer than 256 bytes; continue; fi
  # shellcheck disable=SC2086 # splitting the line into fields is the point
  set -- $l
  case ${1-} in
  R)
    case ${2-} in '' | *[!A-Za-z0-9_]*) no bad registration id; continue ;; esac
    rid=$2
    if ! { [ $# -eq 7 ] && num "$3" && num "$4" && num "$5"; }; then no malformed registration; continue; fi
    case $6 in - | [A-Za-z0-9_]*) ;; *) no bad spawn key; continue ;; esac
    case $6 in *[!A-Za-z0-9_-]*) no bad spawn key; continue ;; esac
    c=$7
    if [ "$c" = - ]; then
      [ "$3" -gt 1 ] || { no pgid must be greater than 1; continue; }
    else
      case $c in *\\*) c=$(printf '%b.' "$c") c=${c%.} ;; esac
      case /$c/ in //* | */./* | */../*) no cgroup is not a path below the base; continue ;; esac
      c=$base/$c
      [ -d "$c" ] || { no cgroup is not a directory below the base; continue; }
    fi
    if [ "$3" -eq "$me" ] || [ "$3" -eq "$opg" ] || [ "$3" -eq 1 ]; then no unsafe group "$3"; continue; fi
    eval "g_$2=\"\$3 \$4 \$5 \$6\" c_$2=\$c"
    case $ids in *" $2 "*) ;; *) ids="$ids$2 " ;; esac
    echo "A $2"
    ;;
  U)
    case ${2-} in '' | *[!A-Za-z0-9_]*) no bad registration id; continue ;; esac
    rid=$2
    [ $# -eq 2 ] || { no malformed unregistration; continue; }
    case $ids in *" $2 "*) ids="${ids%% "$2" *} ${ids#* "$2" }" ;; esac
    unset "g_$2" "c_$2"
    echo "A $2"
    ;;
  I)
    [ $# -eq 1 ] || { no malformed idle line; continue; }
    idle=1
    echo "A -"
    ;;
  *) no unknown line ;;
  esac
done
# The owner is gone or closed the pipe: nobody reads replies any more, and
# nothing started from here may hold the reply pipe.
exec >/dev/null

# fields FILE: st, pg, t0 := the state, process group and start time in the
# stat file FILE (/proc/PID/stat); false, with st empty, when it is gone.
fields() {
  st='' s=''
  read -r s 2>/dev/null <"$1" || return 1
  # shellcheck disable=SC2086 # the fields after the command name
  set -- ${s##*) }
  st=$1 pg=$3 t0=${20}
}

# reg ID: $1..$4 := PGID LEADER START KEY of registration ID, cg := its
# cgroup dir (- for none).
# look ID: ok=1 when group ID may have members and may be signalled; then
# live=1 when a live member is known, else pm=its pgid (pgroup mode: only
# zombies may be left, to be confirmed by members). kill -0 of a process
# group succeeds while a zombie member remains, and orphaned zombies stay
# forever where init does not reap them: a zombie is not a member.
# A leader alive with another start time (recycled pid) means the group id
# is a stranger's: never signalled, not counted.
look() {
  ok=0 live=0 pm=''
  eval "set -- \$g_$1; cg=\$c_$1"
  if [ "$cg" != - ]; then
    e=''
    while read -r k v; do [ "$k" = populated ] && e=$v; done 2>/dev/null <"$cg/cgroup.events"
    [ "$e" = 1 ] && ok=1 live=1
    return 0
  fi
  kill -s 0 -- "-$1" 2>/dev/null || return 0
  if fields "/proc/$2/stat"; then
    [ "$3" = 0 ] || [ "$t0" = "$3" ] || return 0
    case $st in Z | X) ;; *) [ "$pg" = "$1" ] && live=1 ;; esac
  fi
  ok=1
  [ "$live" = 1 ] || pm=$1
}

# hit SIG: send SIG to every group of $pending that may have members, and to
# the escapees found by the last sweep.
hit() {
  sig=$1
  for id in $pending; do
    look "$id"
    [ "$ok" = 1 ] || continue
    eval "set -- \$g_$id"
    if [ "$cg" = - ]; then
      kill -s "$sig" -- "-$1" 2>/dev/null
    elif [ "$sig" = KILL ]; then
      echo 1 2>/dev/null >"$cg/cgroup.kill"
    else
      # A cgroup whose members are exiting may read as 0: kill 0 would
      # signal this script's own group. Only pids above 1 are signalled.
      while read -r p; do num "$p" && [ "$p" -gt 1 ] && kill -s "$sig" "$p" 2>/dev/null; done 2>/dev/null <"$cg/cgroup.procs"
    fi
  done
  for p in $esc; do kill -s "$sig" "$p" 2>/dev/null; done
}

# members PGID...: alive := those of the given groups that have a live
# (non-zombie) member, as " PG PG ... ", from one scan of /proc.
members() {
  want=" $* " alive=' '
  set +f
  set -- /proc/[0-9]*/stat
  set -f
  for f; do
    fields "$f" || continue
    case $st in Z | X) continue ;; esac
    case $want in *" $pg "*) case $alive in *" $pg "*) ;; *) alive="$alive$pg " ;; esac ;; esac
  done
}

# pgof ID: pgid := the process group of registration ID.
pgof() { eval "set -- \$g_$1"; pgid=$1; }

# check: left=1 when anything may still be alive. Groups seen empty are
# dropped from the front of $pending, and the check stops at the first
# live one, so a poll costs little however many groups wait; groups that
# may hold only zombies are confirmed by one scan of /proc, only when
# nothing else is known alive. Escapees that are gone or zombies are
# dropped from $esc.
check() {
  left=0 keep='' rest=$pending maybe=''
  for id in $pending; do
    look "$id"
    if [ "$live" = 1 ]; then left=1; break; fi
    rest=${rest#"$id" }
    [ -n "$pm" ] && keep="$keep$id " maybe="$maybe $pm"
  done
  pending=$keep$rest
  e=$esc esc=''
  for p in $e; do
    fields "/proc/$p/stat" || continue
    case $st in Z | X) ;; *) esc="$esc $p" left=1 ;; esac
  done
  [ "$left" = 0 ] && [ -n "$maybe" ] || return 0
  # shellcheck disable=SC2086 # a list of pgids: splitting is the point
  members $maybe
  keep=$pending pending=''
  for id in $keep; do
    pgof "$id"
    case $alive in *" $pgid "*) pending="$pending$id " left=1 ;; esac
  done
}

# sweep: esc=pids of live processes that carry the spawn key of a registered
# group without a cgroup (escapees of their process group the owner never saw).
sweep() {
  keys='' esc=''
  for id in $ids; do
    eval "set -- \$g_$id; cg=\$c_$id"
    [ "$cg" = - ] && [ "$4" != - ] && keys="$keys|$4"
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

# now: c := the time since boot in centiseconds (/proc/uptime).
now() { read -r u _ </proc/uptime; c=${u%.*}${u#*.}; c=${c#"${c%%[!0]*}"}; c=${c:-0}; }

# The grace runs from EOF: the deadline is fixed first, so that the TERM
# round and the polls count against it and KILL fires at the grace.
# Signal first: the registered groups get TERM before the sweep, which
# reads the environment of every process (slow with many, and it blocks on
# a process stuck in the kernel); the escapees it finds get TERM after.
now
start=$c end=$((c + (grace + 9) / 10))
pending=${ids# } esc=''
hit TERM
sweep
for p in $esc; do kill -s TERM "$p" 2>/dev/null; done
check
while [ "$left" = 1 ]; do
  now
  [ "$c" -lt "$end" ] || break
  # Poll every 10 ms at first (TERM-obeying groups go at once) and near
  # the deadline; in between every 50 ms, to spare the CPU.
  if [ $((c - start)) -gt 10 ] && [ $((end - c)) -gt 6 ]; then sleep 0.05; else sleep 0.01; fi
  check
done
if [ "$left" = 1 ]; then
  sweep
  hit KILL
  n=0
  while [ "$left" = 1 ] && [ $n -lt 100 ]; do
    sleep 0.01
    check
    n=$((n + 1))
  done
fi
# The cgroups of the groups registered, and the owner's subtree unless the
# owner closed the pipe only because it was idle: the subtree lives as long
# as its owner, not as long as one supervisor.
for id in $ids; do
  eval "cg=\$c_$id"
  [ "$cg" = - ] || rmdir "$cg" 2>/dev/null
done
[ "$own" = - ] || [ "$idle" = 1 ] || rmdir "$own" 2>/dev/null
exit 0
