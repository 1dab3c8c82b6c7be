# hermes death supervisor. Run as: sh -c SCRIPT hermes-supervisor GRACE_MS OWNER_PGID CGBASE CGOWN [TABLE]
# (CGBASE: every cgroup dir is below it; CGOWN: the owner's subtree, removed
# at the owner's death; - for none. TABLE: where the process table is read,
# proc (Linux's /proc) or ps (POSIX ps -A -o ..., as on darwin, which has no
# /proc); by default proc where /proc is mounted, else ps)
# stdin is the read end of the owner's death pipe. Lines (<= 256 bytes):
#   R ID PGID LEADER START KEY CG  register or replace ID (PGID 0: cgroup only;
#                                  START 0: no leader to check, else its start
#                                  time in /proc's unit; with TABLE ps, the
#                                  leader's start as ps shows it (lstart) is
#                                  read when the line is; KEY: - for none;
#                                  CG: - for none, else the cgroup dir relative
#                                  to CGBASE, each byte outside [A-Za-z0-9._/-]
#                                  written \0ooo, as printf %b reads it)
#   U ID                           unregister ID
#   U *                            unregister every ID (answered A *)
#   I                              the owner closes the pipe because nothing is
#                                  registered: at EOF, CGOWN is left in place
#   C                              the owner closes the pipe next, at its clean
#                                  exit: what EOF does, now; with nothing
#                                  registered, exit at once (the owner
#                                  removes CGOWN itself)
# stdout is the reply pipe: every line read gets one reply, in order:
#   A ID                           accepted (ID - for I)
#   N ID REASON...                 refused, nothing changed (ID - when unreadable)
# At EOF: TERM every registered group, wait up to GRACE_MS for all to be
# empty, KILL what is left, remove the cgroups, exit.
set -f
trap '' HUP INT QUIT TSTP TTIN TTOU PIPE
grace=$1 opg=$2 base=$3 own=$4 tab=${5-} me=$$ ids=' ' idm='' idt='' idle=0 cg=- live=0 all=0
case $tab in proc | ps) ;; *) if [ -r "/proc/$me/stat" ]; then tab=proc; else tab='ps'; fi ;; esac
# EOF finds escapees with awk: without it nothing is registered, so that
# nothing runs that this supervisor could not end.
awk=$(command -v awk 2>/dev/null) || awk=
num() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }
# nums WORD...: true when every WORD is a number.
nums() { for n_; do num "$n_" || return 1; done; }
# words TEXT: w := the words of TEXT joined by single spaces (ps pads).
# shellcheck disable=SC2086,SC2034 # splitting into words is the point; w is read by eval
words() { set -- $1; w="$*"; }
no() { echo "N $rid $*"; }
# ids (with idm and idt, see listed) lists every id registered since it
# was last compacted, each once
# (i_ID marks those in it); an unregistration only unsets g_ID, so that no
# line costs work that grows with the registrations (cutting a word out of
# a long string does). all and live count the ids listed and those still
# registered; once the unregistered outnumber the registered, compact
# drops them from ids: work proportional to the lines that came since.
compact() {
  k=$ids$idm$idt ids=' ' idm='' idt='' all=0
  for x in $k; do
    eval "y=\${g_$x+1}"
    if [ -n "$y" ]; then listed "$x"; else unset "i_$x"; fi
  done
}

# listed ID: add ID to the list of ids. The list is three strings, ids,
# idm and idt (in that order): an id is added to the short idt, which
# moves into idm once it holds a kilobyte, and idm into ids once it holds
# 16: appending to a string copies it, so that an addition costs work
# that grows with the short strings, not with the whole list.
listed() {
  idt="$idt$1 " all=$((all + 1))
  [ ${#idt} -ge 1024 ] || return 0
  idm="$idm$idt" idt=''
  [ ${#idm} -ge 16384 ] || return 0
  ids="$ids$idm" idm=''
}
# mark KEY: m := the mark of the spawn key KEY, OWNERPID_OWNERSTART_SEQ:
# (OWNERSTART mod 2^13) * 2^50 + OWNERPID * 2^28 + SEQ mod 2^28, the soft
# RLIMIT_LOCKS the owner gave the spawn (see markOf in mark.go); false for
# a key of another shape.
# shellcheck disable=SC2086 # splitting the key at _ is the point
mark() {
  case $1 in *[!0-9_]* | _* | *_ | *__* | 0* | *_0[0-9]*) return 1 ;; esac
  IFS=_
  set -- $1
  unset IFS
  [ $# -eq 3 ] && [ ${#1} -le 7 ] && [ ${#2} -le 18 ] && [ ${#3} -le 18 ] && [ "$1" -lt 4194304 ] || return 1
  m=$((($2 % 8192) * 1125899906842624 + $1 * 268435456 + $3 % 268435456))
}

while IFS= read -r l; do
  rid=-
  if [ ${#l} -gt 256 ]; then no line longer than 256 bytes; continue; fi
  # shellcheck disable=SC2086 # splitting the line into fields is the point
  set -- $l
  case ${1-} in
  R)
    case ${2-} in '' | *[!A-Za-z0-9_]*) no bad registration id; continue ;; esac
    rid=$2
    [ -n "$awk" ] || { no no awk on PATH: the death supervisor needs it to find what a group left at the owner death: install one, busybox or mawk; continue; }
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
    # Group 0 is a cgroup's before its leader exists ("none yet"), never
    # signalled; the owner's own group reads as 0 too where it was made
    # outside the owner's PID namespace.
    if [ "$3" -ne 0 ] && { [ "$3" -eq "$me" ] || [ "$3" -eq "$opg" ] || [ "$3" -eq 1 ]; }; then no unsafe group "$3"; continue; fi
    if [ "$tab" = ps ] && [ "$5" != 0 ]; then
      # ps shows no start time in /proc's unit: the leader's lstart now,
      # while its owner vouches for it, is what a later look compares.
      # "gone": it exited already, and its pid can name only a stranger.
      words "$(ps -o lstart= -p "$4" 2>/dev/null)"
      eval "l_$2=\${w:-gone}"
    fi
    eval "y=\${g_$2+1} z=\${i_$2-}"
    [ -n "$y" ] || live=$((live + 1))
    [ -n "$z" ] || { listed "$2"; eval "i_$2=1"; }
    eval "g_$2=\"\$3 \$4 \$5 \$6\" c_$2=\$c"
    # The mark, computed now: EOF does no arithmetic per group.
    if [ "$c" = - ] && mark "$6"; then eval "m_$2=\$m"; else unset "m_$2"; fi
    echo "A $2"
    ;;
  U)
    if [ "${2-}" = '*' ] && [ $# -eq 2 ]; then
      for x in $ids$idm$idt; do unset "g_$x" "c_$x" "l_$x" "m_$x" "i_$x"; done
      ids=' ' idm='' idt='' live=0 all=0
      echo "A *"
      continue
    fi
    case ${2-} in '' | *[!A-Za-z0-9_]*) no bad registration id; continue ;; esac
    rid=$2
    [ $# -eq 2 ] || { no malformed unregistration; continue; }
    eval "y=\${g_$2+1}"
    [ -z "$y" ] || live=$((live - 1))
    unset "g_$2" "c_$2" "l_$2" "m_$2"
    [ $((all - live)) -le $((live + 64)) ] || compact
    echo "A $2"
    ;;
  I)
    [ $# -eq 1 ] || { no malformed idle line; continue; }
    idle=1
    echo "A -"
    ;;
  C)
    [ $# -eq 1 ] || { no malformed closing line; continue; }
    echo "A -"
    [ "$live" -gt 0 ] || exit 0
    break
    ;;
  *) no unknown line ;;
  esac
done
# The owner is gone or closed the pipe: nobody reads replies any more, and
# nothing started from here may hold the reply pipe.
exec >/dev/null

# The process table is read one of two ways (TABLE):
#   proc: /proc/PID/stat, of the processes a look needs (Linux);
#   ps:   one run of ps -A -o pid=,ppid=,pgid=,stat=,lstart= per look at
#         the groups (snap), the options procps and the BSDs' ps share.
# A read builtin reads a byte per system call (it must not read past its
# line): some 300 for one stat file, so a look at many groups reads their
# files with one cat (stats), and scans of the whole table use grep.
nl='
'

# fields FILE: st, pg, t0 := the state, process group and start time in the
# stat file FILE (/proc/PID/stat); false, with st empty, when it is gone.
fields() {
  st='' s=''
  read -r s 2>/dev/null <"$1" || return 1
  record "$s"
}

# record RECORD: st, pg, t0 := the state, process group and start time in
# RECORD, one process's /proc/PID/stat. The fields follow the last ") ":
# the command name before it may hold any byte, ") " and newlines too.
# shellcheck disable=SC2086 # the fields after the command name
record() {
  x=${1#*) }
  while :; do case $x in *") "*) x=${x#*) } ;; *) break ;; esac; done
  set -- $x
  st=${1-} pg=${3-} t0=${20-}
}

# Sets of pids or pgids are variables, one a member (a_PID, v_PG, ...):
# dash keeps them in a hash table, so a lookup costs the same however many
# groups are registered, where a match in a list of words costs its
# length. Every name is built from a number checked by num, or from the
# registrations, whose numbers were checked when they came.

# stats PID...: the stat files of PID... in one run of cat: s_PID := "ST PG
# T0" for each that is alive (see leader), a_PID := 1 for each asked, and
# asked := " PID... ". A command
# name with a newline splits its record over lines: a record is whole once
# 20 fields follow its last ") " (a name has at most 15 bytes).
stats() {
  forget
  [ $# -gt 0 ] || return 0
  asked=" $* "
  for p; do num "$p" && eval "a_$p=1"; done
  fs=$(printf '/proc/%s/stat ' "$@")
  # shellcheck disable=SC2086 # a list of /proc paths: plain words
  t=$(cat $fs 2>/dev/null)
  r='' IFS=$nl
  for l in $t; do
    unset IFS
    r=$r$l
    record "$r"
    if [ -n "$t0" ]; then
      p=${r%% *}
      num "$p" && eval "s_$p=\"\$st \$pg \$t0\""
      r=''
    else
      r=$r$nl
    fi
  done
  unset IFS
}

# forget: drop what stats read (a look reads the table afresh).
forget() {
  for p in $asked; do num "$p" && unset "s_$p" "a_$p"; done
  asked=' '
}
asked=' '

# unmark: empty the set of live groups (v_PG, listed in alive).
unmark() {
  for g in $alive; do unset "v_$g"; done
  alive=' '
}
alive=' ' seen=' '

# snap ID...: one read of the table by ps, for the registrations ID... and
# the escapees in $esc: v_PG := 1 (listed in alive) for those of their
# groups that have a live (non-zombie) member; q_PID := "PGID LSTART"
# (listed in seen) for their leaders and escapees that are alive. P_PID
# and G_PG mark, while it reads, the pids and groups asked for.
snap() {
  unmark
  for p in $seen; do unset "q_$p"; done
  seen=' ' wp=$esc wi=$*
  for p in $esc; do eval "P_$p=1"; done
  for id; do
    eval "set -- \$g_$id"
    eval "P_$2=1 G_$1=1"
    wp="$wp $2"
  done
  t=$(ps -A -o pid=,ppid=,pgid=,stat=,lstart= 2>/dev/null)
  while read -r p pp g s l; do
    case $s in '' | Z* | X*) continue ;; esac
    nums "$p" "$pp" "$g" || continue
    eval "y=\${G_$g-} z=\${v_$g-}"
    [ -n "$y" ] && [ -z "$z" ] && eval "v_$g=1" && alive="$alive$g "
    eval "y=\${P_$p-}"
    if [ -n "$y" ]; then
      words "$l"
      seen="$seen$p "
      eval "q_$p=\"\$g \$w\""
    fi
  done <<END
$t
END
  for p in $wp; do unset "P_$p"; done
  for id in $wi; do
    eval "set -- \$g_$id"
    unset "G_$1"
  done
}

# leader PID: st, pg, t0 := the state, process group and start time of PID
# (its lstart with TABLE ps); false, with st empty, when it is gone.
# With TABLE proc, from what stats read when it was asked for PID, else
# from PID's stat file alone.
leader() {
  if [ "$tab" = proc ]; then
    eval "y=\${a_$1-}"
    if [ -z "$y" ]; then
      fields "/proc/$1/stat"
      return
    fi
    eval "s=\${s_$1-}"
    st=''
    [ -n "$s" ] || return 1
    # shellcheck disable=SC2086 # ST PG T0
    set -- $s
    st=$1 pg=$2 t0=$3
    return 0
  fi
  st=''
  eval "y=\${q_$1+1}"
  [ -n "$y" ] || return 1
  eval "set -- \$q_$1"
  st=R pg=$1
  shift
  t0="$*"
}

# reg ID: $1..$4 := PGID LEADER START KEY of registration ID, cg := its
# cgroup dir (- for none).
# look ID: live=1 when a live member of group ID is known, else pm=its
# pgid when it may hold zombies only (pgroup mode: to be confirmed by
# members); neither when it is empty or not ours. kill -0 of a process
# group succeeds while a zombie member remains, and orphaned zombies stay
# forever where init does not reap them: a zombie is not a member.
# A leader alive with another start time (recycled pid) means the group id
# is a stranger's: never signalled (hit), not counted. With TABLE ps the
# start compared is the lstart read at registration (snap must have run).
look() {
  live=0 pm=''
  eval "set -- \$g_$1; cg=\$c_$1; w0=\${l_$1-}"
  if [ "$cg" != - ]; then
    e=''
    while read -r k v; do [ "$k" = populated ] && e=$v; done 2>/dev/null <"$cg/cgroup.events"
    [ "$e" = 1 ] && live=1
    return 0
  fi
  kill -s 0 -- "-$1" 2>/dev/null || return 0
  [ "$tab" = proc ] && w0=$3
  if leader "$2"; then
    [ "$3" = 0 ] || [ "$t0" = "$w0" ] || return 0
    case $st in Z | X) ;; *) [ "$pg" = "$1" ] && live=1 ;; esac
  fi
  [ "$live" = 1 ] || pm=$1
}

# table ID...: read what looks at the registrations ID... and at the
# escapees in $esc need: with TABLE ps, one run of ps (snap); with TABLE
# proc, the stat files of their leaders and of the escapees, with one cat
# (stats).
table() {
  if [ "$tab" = ps ]; then
    snap "$@"
    return
  fi
  lp=''
  for tid; do
    eval "set -- \$g_$tid; cg=\$c_$tid"
    [ "$cg" = - ] && lp="$lp $2"
  done
  # shellcheck disable=SC2086 # a list of pids: splitting is the point
  stats $lp $esc
}

# aim: to := the targets of a signal to the groups of $pending, and esc
# += the escapees found by ancestry, from one read of their cgroups'
# members and then one of the whole table, both before any signal, and
# one run of awk over them (rg, cgs: see keyed). The work grows with the
# processes and the groups, once each: awk indexes the table by parent.
# Targets: -PGID for each process group whose leader is gone or is the
# one registered (START 0: not checked; with TABLE ps, the lstart read at
# registration); each member of a cgroup (a member exiting may read as 0:
# only pids above 1). Escapees: the live processes outside those that
# descend from a member of one of them by parent links, but this script;
# and each member the table showed in a targeted group but its leader, by
# its pid too: a member may leave its group (setsid, as a daemon does)
# between the read and the signal, where -PGID no longer reaches it and
# its parent's death takes it out of the next read's reach.
# A command name may hold any byte, newlines too: the fields of a stat
# record are those after its last ") ", and its pid the file's name.
# With no group pending (the clean stop's usual EOF: every group ended
# and was unregistered) there is nothing to aim at and no member to
# descend from: the table, which costs a read of every process on the
# machine, is not read.
aim() {
  if [ -z "$rg$cgs" ]; then
    to=''
    return 0
  fi
  # shellcheck disable=SC2086 # a list of cgroup.procs files: plain words
  t=$({
    printf '%s' "$rg"
    echo C
    [ -z "$cgs" ] || cat -- $cgs 2>/dev/null
    echo T
    if [ "$tab" = ps ]; then
      ps -A -o pid=,ppid=,pgid=,stat=,lstart= 2>/dev/null
    else
      set +f
      grep '' /dev/null /proc/[0-9]*/stat 2>/dev/null
    fi
  } | awk -v me="$me" -v tab="$tab" '
function row(p, pp, g, st, w) {
  if (p !~ /^[0-9]+$/ || pp !~ /^[0-9]+$/ || g !~ /^[0-9]+$/) return
  p += 0; t0[p] = w
  if (st ~ /^[ZX]/) return
  k[pp + 0, ++nk[pp + 0]] = p
  if ((g + 0) in r && p > 1) { n[p] = 1; mg[p] = g + 0 }
}
s == 0 && $1 == "G" {
  w = $6; for (i = 7; i <= NF; i++) w = w " " $i
  ng++; gp[ng] = $2 + 0; gl[ng] = $3 + 0; gw[ng] = ($4 == 0) ? "" : w; r[$2 + 0] = 1
  next
}
$0 == "C" && s == 0 { s = 1; next }
$0 == "T" && s == 1 { s = 2; next }
s == 1 { if ($1 ~ /^[0-9]+$/ && $1 > 1 && !(($1 + 0) in n)) { n[$1 + 0] = 1; to = to " " ($1 + 0) } next }
s == 2 && tab == "ps" { w = $5; for (i = 6; i <= NF; i++) w = w " " $i; row($1, $2, $3, $4, w); next }
s == 2 {
  i = index($0, "/stat:"); p = substr($0, 7, i - 7); x = substr($0, i + 6)
  while ((i = index(x, ") ")) > 0) x = substr(x, i + 2)
  if (split(x, f, " ") >= 20) row(p, f[2], f[3], f[1], f[20])
}
END {
  for (i = 1; i <= ng; i++)
    if (gw[i] == "" || !(gl[i] in t0) || t0[gl[i]] == gw[i]) { to = to " -" gp[i]; hit[gp[i]] = 1 }
  for (p in mg) if (mg[p] in hit && p != mg[p] && p != me + 0) e = e " " p
  for (p in n) q[++nq] = p
  for (h = 1; h <= nq; h++)
    for (j = 1; j <= nk[q[h]]; j++) {
      c = k[q[h], j]
      if (c in n || c == me + 0 || c <= 1) continue
      n[c] = 1; q[++nq] = c; e = e " " c
    }
  print "t" to; print "e" e
}')
  to=${t%%"$nl"*} t=${t#*"$nl"}
  to=${to#t} esc="$esc ${t#e}"
}

# strike SIG: send SIG to every group of $pending that may have members,
# to the members of their cgroups (KILL by cgroup.kill as well, which
# reaches a member forked after the read), and to the escapees found by
# ancestry now and by the sweeps before: one read of the table (aim) and
# one kill for them all. keyed must have run for $pending.
strike() {
  aim
  if [ "$1" = KILL ]; then
    for id in $pending; do
      eval "cg=\$c_$id"
      [ "$cg" = - ] || echo 1 2>/dev/null >"$cg/cgroup.kill"
    done
  fi
  # shellcheck disable=SC2086 # a list of targets: splitting is the point
  [ -z "$to$esc" ] || kill -s "$1" -- $to $esc 2>/dev/null
}

# members PGID...: v_PG := 1 (listed in alive) for those of the given
# groups that have a live (non-zombie) member, from one scan of /proc by grep
# (the lines it picks are read again here: it only narrows them down).
# With TABLE ps, snap has set alive already, from the same read as the
# look.
members() {
  [ "$tab" = proc ] || return 0
  unmark
  pgs=''
  for g; do pgs="$pgs|$g" && eval "w_$g=1"; done
  set +f
  t=$(grep -hE "\) [^ZX] [0-9]+ (${pgs#|}) " /proc/[0-9]*/stat 2>/dev/null)
  set -f
  IFS=$nl
  for l in $t; do
    unset IFS
    record "$l"
    case $st in '' | Z | X) continue ;; esac
    num "$pg" || continue
    eval "y=\${w_$pg-} z=\${v_$pg-}"
    [ -n "$y" ] && [ -z "$z" ] && eval "v_$pg=1" && alive="$alive$pg "
  done
  unset IFS
  for g; do unset "w_$g"; done
}

# pgof ID: pgid := the process group of registration ID.
pgof() { eval "set -- \$g_$1"; pgid=$1; }

# check: left=1 when anything may still be alive. Groups seen empty are
# dropped from the front of $pending, and the check stops at the first
# live one, so a poll costs little however many groups wait: with TABLE
# proc the first group's leader is read alone (while anything lives, it
# mostly does), and the others' with one cat once it is not. Groups that
# may hold only zombies are confirmed by one scan of /proc, only when
# nothing else is known alive. Escapees that are gone or zombies are
# dropped from $esc; with TABLE proc they are looked at only once no group
# is known alive (the KILL round sweeps anew). With TABLE ps, one run of
# ps serves the whole check.
check() {
  left=0 keep='' maybe='' looked=0
  # With nothing to look at, ps is not run.
  # shellcheck disable=SC2086 # a list of ids: splitting is the point
  if [ "$tab" != ps ]; then forget; elif [ -n "$pending$esc" ]; then snap $pending; fi
  # The ids still to look at are the positional parameters: shift drops
  # one, where cutting it off the front of a string would copy the rest.
  # shellcheck disable=SC2086 # a list of ids: splitting is the point
  set -- $pending
  while [ $# -gt 0 ]; do
    id=$1
    [ "$looked" = 1 ] && [ "$tab" = proc ] && table "$@"
    looked=$((looked + 1))
    look "$id"
    if [ "$live" = 1 ]; then left=1; break; fi
    shift
    [ -n "$pm" ] && keep="$keep$id " maybe="$maybe $pm"
  done
  pending="$keep$*"
  if [ "$tab" = proc ]; then
    [ "$left" = 0 ] || return 0
    # shellcheck disable=SC2086 # a list of pids: splitting is the point
    [ "$looked" -gt 1 ] || stats $esc
  fi
  e=$esc esc=''
  for p in $e; do
    leader "$p" || continue
    case $st in Z | X) ;; *) esc="$esc $p" left=1 ;; esac
  done
  [ "$left" = 0 ] && [ -n "$maybe" ] || return 0
  # shellcheck disable=SC2086 # a list of pgids: splitting is the point
  members $maybe
  keep=$pending pending=''
  for id in $keep; do
    pgof "$id"
    eval "y=\${v_$pgid-}"
    [ -z "$y" ] || pending="$pending$id " left=1
  done
}

# sweep SIG: strike SIG, and with TABLE proc SIG to the escapees found
# by their tags too (those that carry the spawn key of a group without a
# cgroup in their environment, or its mark: no portable way to read
# either with ps). The escapees of the last sweep that still live are
# kept: the TERM may have ended their parents. An escapee whose parent
# exited before the table is read (sent to init, or to the dead owner, a
# subreaper, then to init) is out of ancestry's reach: only its tags, or
# the owner's registration of it (its scans), name it.
sweep() {
  strike "$1"
  [ "$tab" = proc ] && [ -n "$keys" ] || return 0
  e0=$esc esc=''
  # shellcheck disable=SC2046 # /proc/PID/FILE paths: plain words
  found $(tagged) $(marked)
  # shellcheck disable=SC2086 # a list of pids: splitting is the point
  esc=$(still $esc)
  # shellcheck disable=SC2086 # a list of pids: splitting is the point
  [ -z "$esc" ] || kill -s "$1" $esc 2>/dev/null
  esc="$esc$e0"
}

# keyed ID...: of the registrations ID... that are still registered:
# kept := their ids; rg := "G PGID LEADER START W0" lines for those
# without a cgroup (W0: the leader's start as the table shows it, see
# aim); cgs := the cgroup.procs files of those with one, cgd := their
# dirs; keys := "|KEY|KEY..." the spawn keys of those without a cgroup,
# marks := "|MARK|MARK..." their marks. Each list grows by short strings
# that join it once they hold 4 KB (appending to a string copies it).
keyed() {
  kept='' rg='' keys='' marks='' cgs='' cgd=''
  it='' gt='' kt='' mt='' ct='' dt=''
  for id; do
    # g_ID: "PGID LEADER START KEY"
    eval "x=\${g_$id-} cg=\${c_$id-} m=\${m_$id-} w0=\${l_$id-}"
    [ -n "$x" ] || continue
    it="$it$id "
    [ ${#it} -lt 4096 ] || kept="$kept$it" it=''
    if [ "$cg" != - ]; then
      ct="$ct $cg/cgroup.procs" dt="$dt $cg"
      [ ${#ct} -lt 4096 ] || cgs="$cgs$ct" cgd="$cgd$dt" ct='' dt=''
      continue
    fi
    # shellcheck disable=SC2086 # PGID LEADER START KEY
    set -- $x
    [ "$tab" = ps ] || w0=$3
    gt="${gt}G $x $w0$nl"
    [ ${#gt} -lt 4096 ] || rg="$rg$gt" gt=''
    [ "$4" != - ] || continue
    kt="$kt|$4"
    [ -z "$m" ] || mt="$mt|$m"
    [ ${#kt} -lt 4096 ] || keys="$keys$kt" kt=''
    [ ${#mt} -lt 4096 ] || marks="$marks$mt" mt=''
  done
  kept="$kept$it" rg="$rg$gt" keys="$keys$kt" marks="$marks$mt" cgs="$cgs$ct" cgd="$cgd$dt"
}

# tagged: print the /proc/PID/environ paths of the processes whose
# environment carries one of $keys, one a line (grep reads every one).
tagged() {
  set +f
  grep -lzE "^HERMES_SPAWN=(${keys#|})\$" /proc/[0-9]*/environ 2>/dev/null
  set -f
}

# marked: print the /proc/PID/limits paths of the processes that carry one
# of $marks as their soft limit of file locks, one a line.
marked() {
  [ -n "$marks" ] || return 0
  set +f
  grep -lE "^Max file locks +(${marks#|}) " /proc/[0-9]*/limits 2>/dev/null
  set -f
}

# still PID...: print those of PID... whose environment carries one of
# $keys, or whose limit of file locks is one of $marks, now. A sweep of a
# crowded machine takes seconds: a process it read may have ended since,
# and its pid been given to another; a signal goes only where a tag still
# names the process.
still() {
  [ $# -gt 0 ] || return 0
  {
    # shellcheck disable=SC2046 # /proc/PID/FILE paths: plain words
    grep -lzE "^HERMES_SPAWN=(${keys#|})\$" $(printf '/proc/%s/environ ' "$@") 2>/dev/null
    # shellcheck disable=SC2046 # /proc/PID/FILE paths: plain words
    [ -z "$marks" ] || grep -lE "^Max file locks +(${marks#|}) " $(printf '/proc/%s/limits ' "$@") 2>/dev/null
  } | while read -r f; do
    q=${f#/proc/}
    printf ' %s' "${q%%/*}"
  done
}

# found PATH...: add to esc the pid of each /proc/PID/FILE PATH, but this
# script's and its waiter's (bg).
found() {
  for f; do
    p=${f#/proc/} p=${p%%/*}
    [ "$p" = "$me" ] || [ "$p" = "${bg-}" ] || esc="$esc $p"
  done
}

# now: c := the time since boot in centiseconds (/proc/uptime); with TABLE
# ps (no clock finer than date's seconds in POSIX sh), the time slept so
# far (nap counts it), which lags the clock by what the checks cost, so
# the KILL never comes before the grace.
now() {
  if [ "$tab" = ps ]; then
    c=$slept
    return
  fi
  read -r u _ </proc/uptime
  c=${u%.*}${u#*.} c=${c#"${c%%[!0]*}"} c=${c:-0}
}
slept=0

# nap SECONDS CENTISECONDS: sleep, and count it (see now).
nap() { sleep "$1"; slept=$((slept + $2)); }

# over: true once the grace has passed by the wall clock, to the second
# (TABLE ps: now lags it).
over() { [ "$tab" = ps ] && [ "$(date +%s)" -ge "$dl" ]; }

# finish: wait for the groups and escapees to be gone, polling, up to the
# grace; KILL what is left.
finish() {
  check
  while [ "$left" = 1 ]; do
    now
    [ "$c" -lt "$end" ] || break
    over && break
    # Poll every 10 ms at first (TERM-obeying groups go at once) and near
    # the deadline; in between every 50 ms, to spare the CPU.
    if [ $((c - start)) -gt 10 ] && [ $((end - c)) -gt 6 ]; then nap 0.05 5; else nap 0.01 1; fi
    check
  done
  if [ "$left" = 1 ]; then
    # shellcheck disable=SC2086 # a list of ids: splitting is the point
    keyed $pending
    sweep KILL
    n=0
    while [ "$left" = 1 ] && [ $n -lt 100 ]; do
      nap 0.01 1
      check
      n=$((n + 1))
    done
  fi
}

# tidy: remove the cgroups of the groups registered, and the owner's
# subtree unless the owner closed the pipe only because it was idle.
tidy() {
  # The cgroups of the groups registered, and the owner's subtree unless
  # the owner closed the pipe only because it was idle: the subtree lives
  # as long as its owner, not as long as one supervisor. An owner that
  # closes the pipe at its clean exit removed its subtree already: rmdir,
  # a fork and an exec the owner's exit waits for, runs only when the
  # subtree is still there.
  # shellcheck disable=SC2086 # a list of cgroup dirs: plain words
  [ -z "$cgall" ] || rmdir -- $cgall 2>/dev/null
  [ "$own" = - ] || [ "$idle" = 1 ] || ! [ -d "$own" ] || rmdir "$own" 2>/dev/null
}

# The grace runs from EOF: the deadline is fixed first, so that the TERM
# round and the polls count against it and KILL fires at the grace.
# The escapees are found by their parents first, on every table: the
# table is read before the TERM, which ends the parents and sends their
# children to init (aim). With TABLE proc, the registered groups and
# those escapees get TERM then, while the sweep by tags runs beside them
# (a grep at the left of a pipe): it reads the environment of every
# process, which is slow with many (and blocks on a process stuck in the
# kernel), and the escapees it finds get TERM once the others have theirs.
now
start=$c end=$((c + (grace + 9) / 10))
[ "$tab" = ps ] && dl=$(($(date +%s) + (grace + 999) / 1000 + 1))
esc=''
# shellcheck disable=SC2086 # a list of ids: splitting is the point
keyed $ids$idm$idt
# From here on, ids lists the registered ids alone.
ids=$kept pending=$kept cgall=$cgd idm='' idt=''
if [ "$tab" = ps ] || [ -z "$keys" ]; then
  strike TERM
  finish
else
  { tagged; marked; } | {
    strike TERM
    # The groups and the escapees found by their parents are waited for,
    # and KILLed at the grace, by a waiter of their own: the sweep, read
    # here, may take longer than the grace on a crowded machine, and a
    # group that ignores TERM must not outlive the grace by as much. The
    # escapees the sweep finds are waited for here, up to the same
    # deadline.
    finish &
    bg=$!
    esc='' pending=''
    # shellcheck disable=SC2046 # /proc/PID/FILE paths: plain words
    found $(cat)
    # shellcheck disable=SC2086 # a list of pids: splitting is the point
    esc=$(still $esc)
    # shellcheck disable=SC2086 # a list of pids: splitting is the point
    [ -z "$esc" ] || kill -s TERM $esc 2>/dev/null
    finish
    wait "$bg"
  }
fi
tidy
exit 0
