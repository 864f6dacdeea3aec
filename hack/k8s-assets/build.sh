#!/usr/bin/env bash
# Builds the control-plane binaries the tests and the demo run against into $1
# (default bin/k8s/<kube version>). Skips the work when every binary is present.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kube_version=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$here/go.mod" | head -1)
out=${1:-"$here/../../bin/k8s/${kube_version#v}"}
bins=(kube-apiserver kube-scheduler kube-controller-manager etcd kwok)
missing=0
for b in "${bins[@]}"; do [ -x "$out/$b" ] || missing=1; done
if [ "$missing" = 0 ]; then
  echo "control-plane binaries present in $out"
  exit 0
fi
mkdir -p "$out"
minor=$(echo "$kube_version" | cut -d. -f2)
kube_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${kube_version} \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} \
 -X k8s.io/component-base/version.gitTreeState=clean"
cd "$here"
echo "building control-plane binaries into $out (a cold build takes ~10 minutes on 2 cores)"
CGO_ENABLED=0 go build -ldflags "$kube_ldflags" -o "$out/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kube-controller-manager
CGO_ENABLED=0 go build -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
kwok_version=$(awk '$1=="sigs.k8s.io/kwok"{print $2}' "$here/go.mod" | head -1)
CGO_ENABLED=0 go build -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version}" -o "$out/kwok" sigs.k8s.io/kwok/cmd/kwok
echo "built: $(ls "$out" | tr '\n' ' ')"
