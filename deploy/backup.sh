#!/bin/sh
# A consistent, private backup of codemem's memory: stop the service (it finishes the requests
# in flight and writes what is queued), archive the data directory, start it again.
#     sudo /opt/codemem/deploy/backup.sh            # -> /var/backups/codemem/codemem-<UTC time>.tar.gz
# The archive directory is root's alone (0700) and each archive 0600: it holds every memory.
# Adds sent while the service is stopped get 502 from Caddy; the platform retries them. Settings, for another layout:
#     CODEMEM_SERVICE (codemem), CODEMEM_STATE_DIR (/var/lib/codemem, holding data/),
#     CODEMEM_BACKUP_DIR (/var/backups/codemem).
set -eu
service=${CODEMEM_SERVICE:-codemem}
state=${CODEMEM_STATE_DIR:-/var/lib/codemem}
backups=${CODEMEM_BACKUP_DIR:-/var/backups/codemem}
[ -d "$state/data" ] || { echo "backup: no data directory at $state/data" >&2; exit 1; }
install -d -m 0700 "$backups"
archive="$backups/codemem-$(date -u +%Y%m%dT%H%M%SZ).tar.gz"
umask 077
systemctl stop "$service"
# The service starts again whatever happened to the archive.
trap 'systemctl start "$service"' EXIT
tar -C "$state" -czf "$archive.partial" data
mv "$archive.partial" "$archive"
echo "backup: $archive ($(du -h "$archive" | cut -f1))"
