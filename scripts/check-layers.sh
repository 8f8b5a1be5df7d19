#!/usr/bin/env bash
# Fails when an #include crosses a layer boundary the wrong way:
#   - framework/http/ layers include only downwards
#       handlers -> server -> router, parser; router and parser include
#       neither each other nor anything above them (framework/http/CMakeLists.txt);
#   - framework/tls includes only goro::net below it (and no netpoll/);
#       framework/net includes nothing of framework/;
#   - framework/ and apps/ include no scheduler internal (scheduler/): they
#       use the public headers, and <goro/detail/*.hpp> where a public header
#       is not enough. framework/net alone includes netpoll/netpoll.hpp: it is
#       the netpoller's one client, the socket layer over pollDesc.
# Output: `file:line: layer: include` per offence, and exit status 1.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

status=0
offend() {  # file-glob-prefix, forbidden include regex, why
  local where=$1 pattern=$2 why=$3 hits
  hits=$(git grep -nE "^#include [\"<](${pattern})" -- "$where" || true)
  if [[ -n $hits ]]; then
    sed "s|\$|   ($why)|" <<<"$hits" >&2
    status=1
  fi
}
offend 'framework/http/parser/' 'framework/http/(router|server|handlers)/|goro/' \
  'parser/ is the bottom layer: no runtime, no I/O'
offend 'framework/http/router/' 'framework/http/(parser|server|handlers)/' \
  'router/ depends on nothing else in framework/http'
offend 'framework/http/server/' 'framework/http/handlers/' 'server/ is below handlers/'
offend 'framework/' 'scheduler/' 'a scheduler internal: use include/goro/'
offend 'framework/http/' 'netpoll/' 'the netpoller is reached through goro::net'
offend 'framework/fs/' 'netpoll/' 'the netpoller is reached through goro::net'
offend 'framework/tls/' 'netpoll/|framework/(http|fs)/' 'tls sits on goro::net, below http'
offend 'framework/net/' 'framework/(tls|http|fs)/' 'net is the bottom of framework/'
offend 'apps/' 'scheduler/|netpoll/|framework/' 'apps use the public headers'
exit $status
