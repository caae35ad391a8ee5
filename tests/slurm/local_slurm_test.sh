#!/bin/bash
# A sweep on a real Slurm: starts munged, slurmctld and slurmd on this machine (one node, private
# ports and directories, nothing of a system Slurm touched), writes the job array with
# `ess-sim sweep --slurm-array`, submits it with its submit.sh, waits for the merge job, and checks
# the merged results against the same sweep run unsharded here. Then it cuts one shard's ledger as a
# killed task would leave it, submits again, and checks that the finished points were kept and the
# merge is again the unsharded result.
#
# usage: local_slurm_test.sh ESS_SIM SOURCE_DIR
# Exit 0 pass, 1 fail, 77 skip (Slurm cannot run here: the message says which daemon and why).
# ESS_KEEP_SLURM_TMP=1 keeps the temporary directory (configuration, daemon logs, job logs).
set -euo pipefail

if (($# != 2)); then
  echo "usage: $0 ESS_SIM SOURCE_DIR" >&2
  exit 2
fi
ess_sim=$1
source_dir=$2
readonly SKIP=77
started=$(date +%s%N)

elapsed() { echo "$((($(date +%s%N) - started) / 1000000)) ms"; }
say() { echo "[$(elapsed)] $*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
skip() {
  echo "SKIP: $*"
  exit "$SKIP"
}

# --- What the test needs -------------------------------------------------------------------------
[[ -x $ess_sim ]] || fail "no ess-sim binary at $ess_sim"
base_scenario="$source_dir/scenarios/llama2-7b-a100-decode.json"
[[ -f $base_scenario ]] || fail "no bundled scenario at $base_scenario"
if (($(id -u) != 0)); then
  skip "running as uid $(id -u): slurmd starts each job as its submitting user, which it does as root" \
    "(CI runs this test as root)"
fi
missing=()
for tool in munged munge unmunge slurmctld slurmd sbatch squeue sinfo scontrol scancel; do
  command -v "$tool" > /dev/null || missing+=("$tool")
done
if ((${#missing[@]} > 0)); then
  skip "not installed: ${missing[*]} (Debian packages slurm-wlm and munge; .ci/install-deps installs them)"
fi

tmp=$(mktemp -d /tmp/ess-slurm-test.XXXXXX)
# munged refuses a socket whose directories are not searchable by everyone.
chmod 755 "$tmp"
conf="$tmp/slurm.conf"
munged_pid='' slurmctld_pid='' slurmd_pid='' job_ids=()

# The processes this test started, found by the SLURM_CONF they inherited (slurmstepd and the jobs
# it runs are not our children: slurmd daemonizes them). Our own shell never exported it at exec.
ours() {
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $p == "$$" || $p == "$BASHPID" ]] && continue
    if { tr '\0' '\n' < "/proc/$p/environ"; } 2> /dev/null | grep -qxF "SLURM_CONF=$conf"; then echo "$p"; fi
  done
}

stop_pid() {  # stop_pid PID NAME: TERM, up to 5 s, then KILL
  local pid=$1 i
  [[ -n $pid ]] || return 0
  kill -TERM "$pid" 2> /dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
}

cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM HUP
  if [[ -n $slurmctld_pid ]] && kill -0 "$slurmctld_pid" 2> /dev/null && ((${#job_ids[@]} > 0)); then
    scancel "${job_ids[@]}" 2> /dev/null
    for ((i = 0; i < 50; i++)); do
      [[ -z $(squeue --noheader --format=%i 2> /dev/null) ]] && break
      sleep 0.1
    done
  fi
  stop_pid "$slurmd_pid"
  stop_pid "$slurmctld_pid"
  stop_pid "$munged_pid"
  unset SLURM_CONF
  local left
  left=$(ours)
  if [[ -n $left ]]; then
    echo "cleanup: stopping leftover job processes: $(echo $left)"
    kill -KILL $left 2> /dev/null
  fi
  if [[ ${ESS_KEEP_SLURM_TMP:-} == 1 ]]; then
    echo "kept $tmp"
  else
    rm -rf "$tmp"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

show_log() {  # show_log FILE: its last 30 lines, indented (never fails: it runs on the way out)
  if [[ -s $1 ]]; then
    echo "--- $1 (last 30 lines)"
    tail -n 30 "$1" | sed 's/^/    /' || true
  else
    echo "--- $1: absent or empty"
  fi
}
daemon_logs() {
  local f
  for f in munged.out munged.log slurmctld.out slurmctld.log slurmd.out slurmd.log; do show_log "$tmp/log/$f"; done
}

# --- munged on its own socket and key ------------------------------------------------------------
mkdir -p "$tmp/munge" "$tmp/munge-key" "$tmp/log" "$tmp/state" "$tmp/spool"
chmod 755 "$tmp/munge"
chmod 700 "$tmp/munge-key"
key="$tmp/munge-key/munge.key"
if command -v mungekey > /dev/null; then
  mungekey --create --keyfile="$key" || skip "mungekey could not create a key in $key"
else
  dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
fi
chmod 600 "$key"
socket="$tmp/munge/munge.socket"
munged --foreground --socket="$socket" --key-file="$key" --log-file="$tmp/log/munged.log" \
  --pid-file="$tmp/munge-key/munged.pid" --seed-file="$tmp/munge-key/munged.seed" \
  > "$tmp/log/munged.out" 2>&1 &
munged_pid=$!
for ((i = 0; i < 100; i++)); do
  [[ -S $socket ]] && break
  kill -0 "$munged_pid" 2> /dev/null || break
  sleep 0.1
done
if [[ ! -S $socket ]]; then
  show_log "$tmp/log/munged.out"
  show_log "$tmp/log/munged.log"
  skip "munged did not start (no socket $socket after 10 s); its output and log are above"
fi
if ! munge --socket="$socket" --no-input | unmunge --socket="$socket" > "$tmp/log/unmunge.out" 2>&1; then
  show_log "$tmp/log/unmunge.out"
  skip "munged started but a munge | unmunge round trip through $socket failed (above)"
fi
say "munged up (pid $munged_pid, socket $socket)"

# --- slurm.conf: one node, this machine ----------------------------------------------------------
in_use() {  # the local TCP ports in use, from /proc/net/tcp and tcp6 (no ss or netstat needed)
  local sl local_address rest
  cat /proc/net/tcp /proc/net/tcp6 2> /dev/null | while read -r sl local_address rest; do
    [[ $local_address == *:* ]] || continue
    echo $((16#${local_address##*:}))
  done | sort -u
}
used=" $(in_use | tr '\n' ' ') "
port=''
# Below Linux's ephemeral range (32768-60999), so an outgoing connection cannot take it meanwhile;
# away from Slurm's defaults (6817-6819), so a system Slurm is not disturbed.
for ((try = 0; try < 200; try++)); do
  p=$((20000 + RANDOM % 12000))
  if [[ $used != *" $p "* && $used != *" $((p + 1)) "* ]]; then
    port=$p
    break
  fi
done
[[ -n $port ]] || skip "no two free TCP ports found in 20000-32000"
node=$(hostname -s 2> /dev/null || uname -n)
# The node's layout as slurmd sees it (a mismatch drains the node); memory small, so it always fits.
hw=$(slurmd -C 2> /dev/null | head -n 1 || true)
layout="CPUs=$(nproc)"
if [[ $hw =~ (CPUs=[0-9]+\ Boards=[0-9]+\ SocketsPerBoard=[0-9]+\ CoresPerSocket=[0-9]+\ ThreadsPerCore=[0-9]+) ]]; then
  layout=${BASH_REMATCH[1]}
fi
: > "$tmp/plugstack.conf"
cat > "$conf" << EOF
# Written by tests/slurm/local_slurm_test.sh: a one-node Slurm on private ports and directories.
ClusterName=ess-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/state/slurmctld.pid
SlurmdPidFile=$tmp/spool/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$tmp/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
# Finished jobs stay known to scontrol this long (there is no accounting database for sacct).
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 $layout RealMemory=100 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf

# --- slurmctld and slurmd ------------------------------------------------------------------------
slurmctld -D -c -f "$conf" > "$tmp/log/slurmctld.out" 2>&1 &
slurmctld_pid=$!
slurmd -D -N "$node" -f "$conf" > "$tmp/log/slurmd.out" 2>&1 &
slurmd_pid=$!
state=''
for ((i = 0; i < 300; i++)); do
  for d in slurmctld slurmd; do
    pid_var=${d}_pid
    if ! kill -0 "${!pid_var}" 2> /dev/null; then
      wait "${!pid_var}" 2> /dev/null && rc=0 || rc=$?
      eval "${d}_pid=''"
      daemon_logs
      skip "$d exited with status $rc while starting (its output and the daemons' logs are above)"
    fi
  done
  state=$(sinfo --noheader --nodes="$node" --format=%t 2> /dev/null || true)
  [[ $state == idle ]] && break
  sleep 0.1
done
if [[ $state != idle ]]; then
  daemon_logs
  scontrol show node "$node" 2>&1 | sed 's/^/    /'
  skip "node $node is not idle 30 s after starting slurmctld and slurmd (sinfo state '${state:-none}'; logs above)"
fi
say "slurmctld (pid $slurmctld_pid, port $port) and slurmd (pid $slurmd_pid) up: node $node idle ($layout)"

# --- the sweep: 6 points, 3 array tasks; paths with a space and a quote ---------------------------
work="$tmp/sweep dir's"
mkdir -p "$work"
spec="$work/tiny spec.json"
cat > "$spec" << EOF
{"schema": "ess-sim/sweep/v1", "name": "slurm-test",
 "base": "$base_scenario", "steps": 1,
 "axes": [{"path": "workload.batch_per_gpu", "values": [1, 2, 1000000]},
          {"path": "workload.context_length", "values": [512, 1024]}]}
EOF
out="$work/out"
scripts="$work/slurm scripts"
"$ess_sim" sweep "$spec" -o "$out" --slurm-array "$scripts" --shards 3 --jobs 1 --time 00:05:00 \
  --sbatch-option=--export=ALL || fail "ess-sim sweep --slurm-array failed"

# wait_for JOB_IDS...: until squeue no longer lists them (60 s), then every job and array task COMPLETED.
wait_for() {
  local i listed
  for ((i = 0; i < 600; i++)); do
    listed=$(squeue --noheader --jobs="$(IFS=,; echo "$*")" --format=%i 2>&1) || fail "squeue failed: $listed"
    [[ -z $listed ]] && break
    sleep 0.1
  done
  if [[ -n $listed ]]; then
    squeue 2>&1 | sed 's/^/    /'
    for f in "$scripts"/logs/*; do show_log "$f"; done
    daemon_logs
    fail "jobs $* still queued or running after 60 s (squeue above)"
  fi
  local job line bad=0
  for job in "$@"; do
    while read -r line; do
      [[ -n $line ]] || continue
      if [[ $line != *" JobState=COMPLETED "* || $line != *" ExitCode=0:0 "* ]]; then
        echo "    $line" | cut -c1-400
        bad=1
      fi
    done < <(scontrol --oneliner show job "$job")
  done
  if ((bad)); then
    for f in "$scripts"/logs/*; do show_log "$f"; done
    fail "a job did not complete with exit code 0 (scontrol above)"
  fi
}

submit() {
  local text
  text=$("$scripts/submit.sh") || fail "submit.sh failed"
  echo "$text" | sed 's/^/  submit.sh: /'
  read -r array_id merge_id < "$scripts/submitted"
  [[ $text == *"array job $array_id: 3 tasks"* && $text == *"merge job $merge_id:"* ]] ||
    fail "submit.sh did not print the job ids it recorded ($array_id $merge_id)"
  job_ids+=("$array_id" "$merge_id")
}

submit
say "submitted: array job $array_id, merge job $merge_id (dependency $(scontrol --oneliner show job "$merge_id" | grep -o 'Dependency=[^ ]*'))"
wait_for "$array_id" "$merge_id"
tasks=$(scontrol --oneliner show job "$array_id" | grep -c "ArrayJobId=$array_id ")
((tasks == 3)) || fail "array job $array_id had $tasks tasks, expected 3"
say "array job $array_id (3 tasks) and merge job $merge_id completed"

# --- the same sweep unsharded, here --------------------------------------------------------------
"$ess_sim" sweep "$spec" -o "$tmp/unsharded" --jobs 2 > "$tmp/log/unsharded.out" 2>&1 ||
  { cat "$tmp/log/unsharded.out"; fail "the unsharded sweep failed"; }

# A ledger without wall_s (the last field of each record, the one allowed to differ between runs).
without_wall() {
  local lines with
  lines=$(wc -l < "$1")
  with=$(grep -c ',"wall_s":[0-9.e+-]*}$' "$1" || true)
  ((lines == with)) || fail "$1: $with of $lines records end with wall_s"
  sed -E 's/,"wall_s":[0-9.e+-]*}$/}/' "$1"
}
compare_with_unsharded() {
  [[ -f $out/results.csv ]] || fail "the merge wrote no $out/results.csv"
  cmp "$out/results.csv" "$tmp/unsharded/results.csv" ||
    { diff "$out/results.csv" "$tmp/unsharded/results.csv"; fail "results.csv differs from the unsharded run's"; }
  diff <(without_wall "$out/results.jsonl") <(without_wall "$tmp/unsharded/results.jsonl") ||
    fail "results.jsonl records (without wall_s) differ from the unsharded run's"
  cmp "$out/spec.json" "$tmp/unsharded/spec.json" || fail "spec.json differs from the unsharded run's"
  local points
  points=$(wc -l < "$out/results.jsonl")
  ((points == 6)) || fail "the merged ledger has $points records, expected 6"
}
compare_with_unsharded
for ((t = 0; t < 3; t++)); do
  n=$(wc -l < "$out/shard-$t/results.jsonl")
  ((n == 2)) || fail "shard $t ran $n points, expected 2 (points $t and $((t + 3)))"
  ls "$scripts/logs/ess-slurm-test-${array_id}_$t.out" > /dev/null || fail "no log of array task $t"
done
say "merged results.csv is byte-identical to the unsharded run's; results.jsonl equal but wall_s; spec.json equal"

# --- a task killed mid-shard, and the sweep submitted again --------------------------------------
# Shard 1 (points 1 and 4) keeps only point 1 and a torn half of point 4's line, as after a kill.
ledger1="$out/shard-1/results.jsonl"
kept_line=$(head -n 1 "$ledger1")
torn=$(sed -n 2p "$ledger1")
printf '%s\n%s' "$kept_line" "${torn:0:40}" > "$ledger1"
rm "$out/results.csv" "$out/results.jsonl"
ok_before=$(grep -h '"status":"ok"' "$out"/shard-*/results.jsonl | sort)
submit
wait_for "$array_id" "$merge_id"
ok_after=$(grep -h '"status":"ok"' "$out"/shard-*/results.jsonl | sort)
# Every ok record is kept byte for byte, wall_s included: resumed, not re-run.
while read -r line; do
  grep -qxF "$line" <<< "$ok_after" || fail "resubmission re-ran or lost an ok point: $line"
done <<< "$ok_before"
grep -qF '(1 kept from the ledger, 1 run)' "$scripts/logs/ess-slurm-test-${array_id}_1.out" ||
  fail "array task 1 of the resubmission did not resume its ledger"
compare_with_unsharded
say "resubmitted after a killed task: array job $array_id, merge job $merge_id; finished points kept, merge equal again"

echo "PASS: a 6-point sweep as a 3-task Slurm array on a local one-node Slurm, in $(elapsed)"
