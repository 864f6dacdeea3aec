// Package deploy tests how Joist is installed: the OLM bundle (validated with operator-framework/api,
// regenerated without drift), the kustomize deployment rendered and applied to a real apiserver, the
// cert-manager objects decoded with cert-manager's types, the RBAC audit, and the secure metrics
// endpoint of a running manager.
package deploy
