package simulate

import (
	"fmt"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Input bounds: `joist simulate` expands every workload into pods in memory, so a replica count of
// a billion would exhaust memory before the solver starts. Real clusters stay far below these.
const (
	// MaxPods bounds the pods an input expands to (bare pods plus every workload's replicas).
	MaxPods = 200_000
	// MaxInputFileBytes bounds one input file.
	MaxInputFileBytes = 64 << 20
)

// checkFileSize refuses a file larger than MaxInputFileBytes before reading it.
func checkFileSize(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("reading input: %w", err)
	}
	if info.Size() > MaxInputFileBytes {
		return fmt.Errorf("input file %s is %d MiB, more than joist simulate reads (%d MiB): split it or drop what the simulation does not need",
			path, info.Size()>>20, MaxInputFileBytes>>20)
	}
	return nil
}

// countPods adds the pods obj expands to and refuses the input once they pass MaxPods.
func (l *loader) countPods(src source, obj runtime.Object) error {
	n, field := int64(0), ""
	switch o := obj.(type) {
	case *corev1.Pod:
		n = 1
	case *appsv1.Deployment:
		n, field = replicasOr1(o.Spec.Replicas), "spec.replicas"
	case *appsv1.ReplicaSet:
		n, field = replicasOr1(o.Spec.Replicas), "spec.replicas"
	case *appsv1.StatefulSet:
		n, field = replicasOr1(o.Spec.Replicas), "spec.replicas"
	case *batchv1.Job:
		n, field = replicasOr1(o.Spec.Parallelism), "spec.parallelism"
		if o.Spec.Completions != nil && int64(*o.Spec.Completions) < n {
			n, field = int64(*o.Spec.Completions), "spec.completions"
		}
	default:
		return nil
	}
	if n > MaxPods {
		return src.errorf("%s is %d: joist simulate expands at most %d pods; lower %s", field, n, MaxPods, field)
	}
	if l.pods+n > MaxPods {
		return src.errorf("the input expands to more than %d pods (%d before this object, %d here): simulate a smaller slice of the cluster",
			MaxPods, l.pods, n)
	}
	l.pods += n
	return nil
}

func replicasOr1(r *int32) int64 {
	if r == nil {
		return 1
	}
	return int64(*r)
}
