// Package deploy tests how Joist is installed: the Helm chart (rendered and linted with the Helm SDK,
// applied to a real apiserver), the OLM bundle (validated with operator-framework/api, regenerated
// without drift, and its install strategy carried out with the real manager running on its
// permissions alone), the kustomize deployment rendered and applied to a real apiserver, the
// agreement of all three on CRDs, RBAC and webhooks, the cert-manager objects decoded with
// cert-manager's types, the RBAC audit, and the secure metrics endpoint of a running manager.
package deploy
