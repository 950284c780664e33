#!/bin/sh
# Bring codemem's memory back from an archive written by deploy/backup.sh:
#     sudo /opt/codemem/deploy/restore.sh /var/backups/codemem/codemem-20261207T010000Z.tar.gz
# Stops the service, moves the current data directory aside (data.before-restore-<time>: remove
# it once the restored service answers as it should), unpacks the archive, gives every file to
# the service's user, starts the service and waits for /health. Same settings as backup.sh,
# and CODEMEM_USER (codemem), CODEMEM_HEALTH_URL (http://127.0.0.1:8000/health).
set -eu
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: restore.sh ARCHIVE (a codemem-*.tar.gz from backup.sh)" >&2; exit 2; }
archive=$1
service=${CODEMEM_SERVICE:-codemem}
state=${CODEMEM_STATE_DIR:-/var/lib/codemem}
owner=${CODEMEM_USER:-codemem}
health=${CODEMEM_HEALTH_URL:-http://127.0.0.1:8000/health}
tar -tzf "$archive" data/ >/dev/null 2>&1 || { echo "restore: $archive holds no data/ directory" >&2; exit 1; }
systemctl stop "$service"
if [ -e "$state/data" ]; then
    aside="$state/data.before-restore-$(date -u +%Y%m%dT%H%M%SZ)"
    mv "$state/data" "$aside"
    echo "restore: the memory it replaced is in $aside"
fi
tar -C "$state" -xzf "$archive" data
chown -R "$owner:$owner" "$state/data"
systemctl start "$service"
for _ in $(seq 60); do
    if curl -fsS "$health" >/dev/null 2>&1; then
        echo "restore: $service answers at $health with the memory of $archive"
        exit 0
    fi
    sleep 1
done
echo "restore: $service did not answer at $health within 60 s (journalctl -u $service)" >&2
exit 1
