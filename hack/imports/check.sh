#!/usr/bin/env bash
# Fails when an import points the wrong way (README "Layout"): the pure packages import no
# cloudprovider, controllers, webhooks or cmd package, and the disruption loop does not import the
# provisioning loop.
set -euo pipefail
mod=$(go list -m)
fail=0
pure="api/... catalog/... requirements/... snapshot/... solver/... policy/... podkind/... quantity/... disruptionpolicy/... claimtemplate/..."
for p in $pure; do
  bad=$(go list -deps "./$p" | grep -E "^$mod/(cloudprovider|controllers|webhooks|cmd)(/|$)" || true)
  if [ -n "$bad" ]; then
    echo "pure package ./$p imports: $bad"
    fail=1
  fi
done
if go list -deps ./controllers/disruption | grep -qx "$mod/controllers/provisioning"; then
  echo "controllers/disruption imports controllers/provisioning: move what both need to a pure package"
  fail=1
fi
exit $fail
