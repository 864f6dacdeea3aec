package env

import (
	"os"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

// KWOKNodeAnnotation marks a Node as simulated by the KWOK process the environment starts.
const (
	KWOKNodeAnnotation      = "kwok.x-k8s.io/node"
	KWOKNodeAnnotationValue = "fake"
)

// kwokOptions raises KWOK's stage parallelism from its default of 4, which otherwise takes ~10 s to
// mark 1,000 bound pods Running and would dominate end-to-end measurements (as client rate limits
// would for kube-scheduler and kube-controller-manager).
const kwokOptions = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 32
  nodePlayStageParallelism: 8`

// writeKWOKStages writes the Stage documents KWOK needs (it refuses to start without any), taken from
// the kwok module itself so they stay in step with the binary.
func writeKWOKStages(path string) error {
	docs := []string{
		kwokOptions,
		nodefast.DefaultNodeInit,
		nodeheartbeat.DefaultNodeHeartbeat,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	for i, d := range docs {
		docs[i] = strings.TrimSpace(d)
	}
	return os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o600)
}
