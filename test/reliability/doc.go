// Package reliability holds Joist's reliability suites: the manager runs as its own process (built
// from ./cmd/joist) against a real control plane (kube-apiserver, etcd, kube-scheduler,
// kube-controller-manager, KWOK) and is crashed, starved or faulted while it scales up; each suite
// asserts the cluster converges and reports figures. `go test ./test/reliability` runs short
// versions; `make test-reliability` (RELIABILITY_LONG=1) the full ones, whose figures are published
// in docs/reliability.md.
package reliability
