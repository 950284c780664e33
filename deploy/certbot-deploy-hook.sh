#!/bin/sh
# certbot's deploy hook for codemem's own TLS (`codemem serve --tls-cert/--tls-key`):
#     sudo install -m 0755 /opt/codemem/deploy/certbot-deploy-hook.sh /etc/letsencrypt/renewal-hooks/deploy/codemem.sh
#     sudo RENEWED_LINEAGE=/etc/letsencrypt/live/memory.example.org /etc/letsencrypt/renewal-hooks/deploy/codemem.sh
# certbot's files are root's alone (privkey.pem 0600); codemem runs as its own user. So after
# each issue or renewal, certbot runs this with RENEWED_LINEAGE set: the pair is copied to
# /etc/codemem (the key 0640 root:codemem, readable by the service and nobody else) and the
# service restarted, since it reads the certificate at start-up (a restart loses nothing
# acknowledged). Settings: CODEMEM_TLS_DIR (/etc/codemem), CODEMEM_GROUP (codemem),
# CODEMEM_SERVICE (codemem).
set -eu
: "${RENEWED_LINEAGE:?set by certbot: the live directory of the renewed certificate}"
dir=${CODEMEM_TLS_DIR:-/etc/codemem}
group=${CODEMEM_GROUP:-codemem}
service=${CODEMEM_SERVICE:-codemem}
install -o root -g "$group" -m 0640 "$RENEWED_LINEAGE/privkey.pem" "$dir/privkey.pem.new"
install -o root -g "$group" -m 0644 "$RENEWED_LINEAGE/fullchain.pem" "$dir/fullchain.pem.new"
mv "$dir/privkey.pem.new" "$dir/privkey.pem"
mv "$dir/fullchain.pem.new" "$dir/fullchain.pem"
systemctl restart "$service"
