package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/cmd/joist/simulate"
	"github.com/joist-dev/joist/snapshot"
)

// TestSimulateOnClusterDumpPredictsNodeClaims dumps a live cluster (a Joist node running pods, a
// NodePool with limits, a Guardrail whose cluster-wide cpu ceiling cuts the next launch short, and
// pending pods) to YAML, runs `joist simulate` on the dump, then starts Joist: the NodeClaims it
// creates are exactly the ones simulate predicted (pool, instance type, zone, capacity type).
func TestSimulateOnClusterDumpPredictsNodeClaims(t *testing.T) {
	s := newStack(t, kwokOptions())
	ctx := s.ctx(4 * time.Minute)
	np := kwokNodePool("general", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200")})
	s.create(ctx, kwokNodeClass(0), np)
	first := deployment("first", 3, "500m", "512Mi")
	s.create(ctx, first)
	s.startManager()
	s.waitRunning(ctx, 3, first.Spec.Template.Labels)
	s.stopManager()
	before := map[string]bool{}
	var inUse resource.Quantity
	for _, nc := range s.claims() {
		before[nc.Name] = true
		inUse.Add(snapshot.ClaimCapacity(&nc)[corev1.ResourceCPU])
	}
	// The ceiling leaves 12 cpu beyond what runs: less than the 24 cpu the next pods request.
	ceiling := inUse.DeepCopy()
	ceiling.Add(resource.MustParse("12"))
	s.create(ctx, &policyv1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Name: "platform"},
		Spec: policyv1alpha1.GuardrailSpec{ClusterLimits: &policyv1alpha1.ClusterLimits{CPU: &ceiling}}})
	web := deployment("web", 30, "500m", "512Mi")
	arm := deployment("arm", 9, "1", "2Gi", nodeSelector(v1.LabelArch, "arm64"))
	s.create(ctx, web, arm)
	s.waitSchedulerSettled(ctx, 42)

	dir := t.TempDir()
	s.dump(ctx, dir)
	var out, errOut bytes.Buffer
	if err := simulate.Run(simulate.Options{Paths: []string{dir}, Output: "json"}, &out, &errOut); err != nil {
		t.Fatalf("joist simulate: %v\n%s", err, errOut.String())
	}
	var report simulate.Report
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("decoding the report: %v\n%s", err, out.String())
	}
	if len(report.NodeClaims) == 0 || len(report.Unschedulable) == 0 {
		t.Fatalf("simulate planned %d nodes and left %d pods unschedulable; the test wants both (the ceiling must bite)\n%s",
			len(report.NodeClaims), len(report.Unschedulable), out.String())
	}
	var want []string
	for _, nc := range report.NodeClaims {
		want = append(want, fmt.Sprintf("%s/%s/%s/%s", nc.NodePool, nc.InstanceType, nc.Zone, nc.CapacityType))
	}
	slices.Sort(want)

	s.startManager()
	var got []string
	launched := func(ctx context.Context) (bool, error) {
		got = got[:0]
		for _, nc := range s.claims() {
			if before[nc.Name] {
				continue
			}
			if nc.Labels[v1.LabelInstanceType] == "" {
				return false, nil // not launched yet
			}
			got = append(got, fmt.Sprintf("%s/%s/%s/%s", nc.Labels[v1.NodePoolLabelKey], nc.Labels[v1.LabelInstanceType],
				nc.Labels[v1.LabelTopologyZone], nc.Labels[v1.CapacityTypeLabelKey]))
		}
		slices.Sort(got)
		return len(got) >= len(want), nil
	}
	describe := func() string {
		return fmt.Sprintf("simulate predicted %v\ncontroller created %v\n%s", want, got, s.describeClaims())
	}
	s.eventually(ctx, fmt.Sprintf("%d new NodeClaims", len(want)), launched, describe)
	// Pods the ceiling left pending are re-planned on every resync: nothing more may launch.
	settle, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for settle.Err() == nil {
		if _, err := launched(settle); err != nil {
			t.Fatal(err)
		}
		if len(got) > len(want) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !slices.Equal(got, want) {
		t.Errorf("NodeClaims differ\n%s", describe())
	}
}

// waitSchedulerSettled waits until n pods exist in the default namespace and each is bound or marked
// unschedulable by the kube-scheduler, so a dump taken now is what Joist will see.
func (s *stack) waitSchedulerSettled(ctx context.Context, n int) {
	s.t.Helper()
	var list corev1.PodList
	s.eventually(ctx, fmt.Sprintf("%d pods bound or unschedulable", n), func(ctx context.Context) (bool, error) {
		if err := s.kube.List(ctx, &list, client.InNamespace("default")); err != nil {
			return false, err
		}
		if len(list.Items) != n {
			return false, nil
		}
		for i := range list.Items {
			p := &list.Items[i]
			if p.Spec.NodeName == "" && !snapshot.MarkedUnschedulable(p) {
				return false, nil
			}
		}
		return true, nil
	}, func() string { return describePending(list.Items) })
}

// dump writes what `kubectl get -o yaml` of the simulation's kinds would: NodePools, NodeClaims,
// Guardrails, Nodes, Pods, DaemonSets and volumes, one List per kind.
func (s *stack) dump(ctx context.Context, dir string) {
	s.t.Helper()
	lists := map[string]client.ObjectList{
		"nodepools": &v1.NodePoolList{}, "nodeclaims": &v1.NodeClaimList{}, "guardrails": &policyv1alpha1.GuardrailList{},
		"nodes": &corev1.NodeList{}, "pods": &corev1.PodList{}, "volumes": &corev1.PersistentVolumeList{},
	}
	for name, l := range lists {
		if err := s.kube.List(ctx, l); err != nil {
			s.t.Fatalf("listing %s: %v", name, err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			s.t.Fatal(err)
		}
		var raw []json.RawMessage
		for _, item := range items {
			s.setKind(item)
			b, err := json.Marshal(item)
			if err != nil {
				s.t.Fatal(err)
			}
			raw = append(raw, b)
		}
		doc, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": ptr.To(raw)})
		if err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), doc, 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
}

func (s *stack) setKind(obj runtime.Object) {
	gvks, _, err := s.env.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		s.t.Fatalf("no kind for %T: %v", obj, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
}
