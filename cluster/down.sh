#!/usr/bin/env bash
# Stops the cluster cluster/up.sh started (its daemons: those started with its slurm.conf, and slurmdbd and MariaDB by
# their pid files) and removes its state folder and its /etc/slurm links (as root).
set -uo pipefail
state="${HYPVL_SLURM_DIR:-/tmp/hypvl-slurm}"
conf="$state/etc/slurm.conf"
[ "$(id -u)" = 0 ] || { echo "cluster/down.sh: run as root" >&2; exit 1; }
[ -f "$conf" ] || { echo "cluster/down.sh: no cluster of cluster/up.sh at $state" >&2; exit 0; }
scancel --state=PENDING,RUNNING --full 2>/dev/null || true
pkill -f -- "-f $conf" 2>/dev/null
for pidfile in "$state/run/slurmdbd.pid" "$state/mariadb/mariadb.pid"; do
  [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
done
for _ in $(seq 60); do
  pgrep -f -- "-f $conf" >/dev/null || { [ -f "$state/mariadb/mariadb.pid" ] && kill -0 "$(cat "$state/mariadb/mariadb.pid")" 2>/dev/null; } || break
  sleep 0.25
done
for name in slurm.conf slurmdbd.conf gres.conf; do
  [ "$(readlink "/etc/slurm/$name" 2>/dev/null)" = "$state/etc/$name" ] && rm -f "/etc/slurm/$name"
done
if grep -q '# hypvl cluster/up.sh$' /etc/hosts; then  # the node names it added (rewritten in place: a bind mount)
  hosts=$(grep -v '# hypvl cluster/up.sh$' /etc/hosts) && printf '%s\n' "$hosts" > /etc/hosts
fi
rm -rf "$state"
echo "cluster/down.sh: stopped" >&2
