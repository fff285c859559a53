#!/usr/bin/env bash
# A one-host SLURM cluster for trying the suite's SLURM profile before a real cluster, and for the tests that run
# jobs through a real scheduler: slurmctld, slurmd and slurmdbd with accounting in MariaDB (so `sacct` answers as on
# real clusters), a generic GPU GRES declared by count (jobs asking for GPUs are scheduled on a CPU machine). Debian's
# packages; run as root:
#
#   sudo bash cluster/up.sh            # installs slurm-wlm, slurmdbd, munge, mariadb-server where missing, starts all
#   sinfo; sacct                       # ...
#   sudo bash cluster/down.sh          # stops every daemon it started and removes its state folder
#
# Everything it writes lives under $HYPVL_SLURM_DIR (default /tmp/hypvl-slurm): configs, spool, logs, the database.
# It writes /etc/slurm/slurm.conf, slurmdbd.conf and gres.conf as links into that folder (Debian's tools read them
# there); an existing slurm.conf it did not write is never replaced (it stops, saying so).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
state="${HYPVL_SLURM_DIR:-/tmp/hypvl-slurm}"
nodes="${HYPVL_SLURM_NODES:-2}"          # slurmd daemons on this host (one per node), where the build allows several
cpus="${HYPVL_SLURM_CPUS:-$(nproc)}"     # CPUs each node declares
gpus="${HYPVL_SLURM_GPUS:-2}"            # GPUs each node declares (a count: no device behind them)
memory="${HYPVL_SLURM_MEMORY_MB:-1024000}"  # memory each node declares (not enforced: paper-scale requests schedule)
db_port="${HYPVL_SLURM_DB_PORT:-3307}"
accounting="${HYPVL_SLURM_ACCOUNTING:-slurmdbd}"  # slurmdbd, or none: a cluster without accounting (sacct knows no job)
log() { printf 'cluster/up.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (it starts daemons and writes /etc/slurm)"
for conf in slurm.conf slurmdbd.conf gres.conf; do
  if [ -e "/etc/slurm/$conf" ] && [ "$(readlink "/etc/slurm/$conf" || true)" != "$state/etc/$conf" ]; then
    die "/etc/slurm/$conf exists and is not this script's: a cluster is configured here already"
  fi
done
start=$(date +%s)
missing=()
for tool in slurmctld slurmd slurmdbd munged mariadbd; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian's slurm-wlm slurmdbd munge mariadb-server (missing: ${missing[*]})"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm slurmdbd munge mariadb-server >/dev/null
fi

mkdir -p "$state"/{etc,log,run,spool/ctld,mariadb}
for n in $(seq 1 "$nodes"); do mkdir -p "$state/spool/node$n"; done
chown -R slurm:slurm "$state/spool" "$state/log" "$state/run"

# munge: the key the package made, or a new one
if ! pgrep -x munged >/dev/null; then
  [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=128 count=1 status=none; }
  chown munge:munge /etc/munge/munge.key && chmod 600 /etc/munge/munge.key
  mkdir -p /run/munge && chown munge:munge /run/munge
  runuser -u munge -- munged
fi

# MariaDB of its own: its data, socket, log and port under $state/mariadb
db="$state/mariadb"
if [ "$accounting" = slurmdbd ]; then
if [ ! -d "$db/data/mysql" ]; then
  mkdir -p "$db/data" && chown -R mysql:mysql "$db"
  mariadb-install-db --user=mysql --datadir="$db/data" --auth-root-authentication-method=socket >/dev/null
fi
chown -R mysql:mysql "$db"
if ! [ -S "$db/mysqld.sock" ]; then
  mariadbd --user=mysql --datadir="$db/data" --socket="$db/mysqld.sock" --port="$db_port" \
    --bind-address=127.0.0.1 --pid-file="$db/mariadb.pid" --log-error="$db/mariadb.log" &
  for _ in $(seq 60); do [ -S "$db/mysqld.sock" ] && break; sleep 0.5; done
  [ -S "$db/mysqld.sock" ] || die "MariaDB did not start: $db/mariadb.log"
fi
mariadb --socket="$db/mysqld.sock" -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
fi

# the node names resolve to this host (torchrun's rendezvous on several nodes meets at the first node's name)
for n in $(seq 1 "$nodes"); do
  getent hosts "node$n" >/dev/null || echo "127.0.0.1 node$n  # hypvl cluster/up.sh" >> /etc/hosts
done

# the configs, from the templates beside this script
node_lines="" gres_lines=""
for n in $(seq 1 "$nodes"); do
  node_lines+="NodeName=node$n NodeHostname=localhost Port=$((17000 + n)) CPUs=$cpus RealMemory=$memory Gres=gpu:$gpus State=UNKNOWN"$'\n'
  # slurmd keeps a GPU only with a character device behind it: /dev/null's, once per GPU (no device is opened)
  mkdir -p "$state/dev"
  for g in $(seq 0 $((gpus - 1))); do
    [ -c "$state/dev/node$n-gpu$g" ] || mknod "$state/dev/node$n-gpu$g" c 1 3
  done
  gres_lines+="NodeName=node$n Name=gpu File=$state/dev/node$n-gpu[0-$((gpus - 1))]"$'\n'
done
sed -e "s|@STATE@|$state|g" -e "s|@DB_PORT@|$db_port|g" "$here/slurmdbd.conf.in" > "$state/etc/slurmdbd.conf"
case "$accounting" in
  slurmdbd) storage=accounting_storage/slurmdbd ;;
  none) storage=accounting_storage/none ;;
  *) die "HYPVL_SLURM_ACCOUNTING is slurmdbd or none, not $accounting" ;;
esac
[ "$accounting" = slurmdbd ] && node_lines="AccountingStorageTRES=gres/gpu"$'\n'"$node_lines"
sed -e "s|@STATE@|$state|g" -e "s|@NODES@|node[1-$nodes]|g" -e "s|@ACCOUNTING@|$storage|g" "$here/slurm.conf.in" \
  > "$state/etc/slurm.conf"
printf '%s' "$node_lines" >> "$state/etc/slurm.conf"
printf '%s' "$gres_lines" > "$state/etc/gres.conf"
chown slurm:slurm "$state/etc/slurmdbd.conf" && chmod 600 "$state/etc/slurmdbd.conf"
mkdir -p /etc/slurm
for conf in slurm.conf slurmdbd.conf gres.conf; do ln -sfn "$state/etc/$conf" "/etc/slurm/$conf"; done

if [ "$accounting" = slurmdbd ]; then
  [ -f "$state/run/slurmdbd.pid" ] && kill -0 "$(cat "$state/run/slurmdbd.pid")" 2>/dev/null || slurmdbd
  for _ in $(seq 60); do sacctmgr -n show cluster >/dev/null 2>&1 && break; sleep 0.5; done
  sacctmgr -i add cluster hypvl >/dev/null 2>&1 || true
  sacctmgr -i add account hypvl Cluster=hypvl Description=tests Organization=hypvl >/dev/null 2>&1 || true
  sacctmgr -i add user "${SUDO_USER:-root}" Account=hypvl >/dev/null 2>&1 || true
fi
conf="$state/etc/slurm.conf"  # every daemon started with it, so that down.sh finds them by it
pgrep -f -- "slurmctld -f $conf" >/dev/null || slurmctld -f "$conf"
for _ in $(seq 20); do scontrol ping >/dev/null 2>&1 && break; sleep 0.5; done
scontrol ping >/dev/null 2>&1 || die "slurmctld did not start: $(tail -n 1 "$state/log/slurmctld.log")"
for n in $(seq 1 "$nodes"); do
  pgrep -f -- "slurmd -f $conf -N node$n" >/dev/null || slurmd -f "$conf" -N "node$n"
done
for _ in $(seq 60); do
  [ "$(sinfo -h -t idle -o '%D')" = "$nodes" ] && break
  sleep 0.5
done
[ "$(sinfo -h -t idle -o '%D')" = "$nodes" ] || die "nodes not up: $(sinfo -h -o '%N %T %E')"
log "up in $(( $(date +%s) - start )) s: $(sinfo -h -o '%D node(s) %T, %c CPUs, %G')"
