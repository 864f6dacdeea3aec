package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kjson "sigs.k8s.io/json"

	v1 "github.com/joist-dev/joist/api/v1"
)

// decodedPod is a bound pod of a ReplicaSet as the apiserver sends it (defaulted), decoded from
// protobuf as the informer decodes it: every string and map its own.
func decodedPod(t testing.TB, i int) *corev1.Pod {
	t.Helper()
	now := metav1.NewTime(time.Unix(1765000000, 0))
	secs := int64(300)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-7d4f-%05d", i), GenerateName: "web-7d4f-", Namespace: "shop",
		UID: types.UID(fmt.Sprintf("0b7c1a3e-7f0a-4c1e-9f4b-%012d", i)), ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: now,
		Labels:          map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4f", UID: "rs-uid", Controller: ptrTo(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "img", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("350m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "default", DeprecatedServiceAccount: "default",
			NodeName: fmt.Sprintf("node-%04d", i/5), SchedulerName: corev1.DefaultSchedulerName, Priority: ptrTo(int32(0)),
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}}},
	}
	return roundTrip(t, p, &corev1.Pod{})
}

// decodedNode is a launched KWOK node as the informer decodes it.
func decodedNode(t testing.TB, i int) *corev1.Node {
	t.Helper()
	now := metav1.NewTime(time.Unix(1765000000, 0))
	name := fmt.Sprintf("general-%05d", i)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(fmt.Sprintf("6e2d-%012d", i)), ResourceVersion: fmt.Sprint(200000 + i),
		Labels: map[string]string{"karpenter.sh/nodepool": "general", corev1.LabelInstanceTypeStable: "c-2x-amd64-linux", corev1.LabelTopologyZone: "zone-a",
			"karpenter.sh/capacity-type": "on-demand", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", corev1.LabelHostname: name,
			"karpenter.sh/registered": "true", "karpenter.sh/initialized": "true"},
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}, Finalizers: []string{"karpenter.sh/termination"}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://" + name, Taints: []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1900m"), corev1.ResourceMemory: resource.MustParse("7Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
				LastHeartbeatTime: now, LastTransitionTime: now}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.34.0", OperatingSystem: "linux", Architecture: "amd64", KernelVersion: "6.1.0"}},
	}
	return roundTrip(t, n, &corev1.Node{})
}

func roundTrip[T interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}](t testing.TB, in, out T) T {
	t.Helper()
	raw, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func sameBacking(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Sharing and interning change no value: a cached pod and node read exactly as the trimmed object
// does, so whatever Joist reads of them survives the transform.
func TestSharedObjectsReadAsTrimmed(t *testing.T) {
	shared := newSharedMaps()
	pod, _ := TrimPod(decodedPod(t, 1))
	sharedPod, err := shared.trimAndSharePod(decodedPod(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(pod, sharedPod) {
		t.Errorf("shared pod differs from the trimmed one:\n%+v\n%+v", sharedPod, pod)
	}
	node, _ := TrimNode(decodedNode(t, 1))
	sharedNode, err := shared.trimAndShareNode(decodedNode(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(node, sharedNode) {
		t.Errorf("shared node differs from the trimmed one:\n%+v\n%+v", sharedNode, node)
	}
}

// Cached pods share their tolerations and the strings pods hold equal; cached nodes of one type
// share their capacity, allocatable and annotations, and their label keys and values. Shared entries
// are dropped once no object holds them.
func TestCachedObjectsShareTolerationsStringsAndCapacity(t *testing.T) {
	shared := newSharedMaps()
	share := func(obj any) any {
		var out any
		var err error
		switch o := obj.(type) {
		case *corev1.Pod:
			out, err = shared.trimAndSharePod(o)
		case *corev1.Node:
			out, err = shared.trimAndShareNode(o)
		}
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := share(decodedPod(t, 1)).(*corev1.Pod), share(decodedPod(t, 2)).(*corev1.Pod)
	if !sameBacking(a.Spec.Tolerations, b.Spec.Tolerations) {
		t.Error("two pods with equal tolerations hold separate copies")
	}
	for what, pair := range map[string][2]string{"namespace": {a.Namespace, b.Namespace}, "node name": {a.Spec.NodeName, b.Spec.NodeName},
		"owner": {a.OwnerReferences[0].Name, b.OwnerReferences[0].Name}, "scheduler": {a.Spec.SchedulerName, b.Spec.SchedulerName},
		"condition": {string(a.Status.Conditions[0].Type), string(b.Status.Conditions[0].Type)}} {
		if !sameString(pair[0], pair[1]) {
			t.Errorf("pods hold two copies of their %s %q", what, pair[0])
		}
	}
	if sameString(a.Name, b.Name) || a.Name == b.Name {
		t.Error("pod names are their own")
	}
	n1, n2 := share(decodedNode(t, 1)).(*corev1.Node), share(decodedNode(t, 2)).(*corev1.Node)
	if !sameBacking(n1.Status.Capacity, n2.Status.Capacity) || !sameBacking(n1.Status.Allocatable, n2.Status.Allocatable) || !sameBacking(n1.Annotations, n2.Annotations) {
		t.Error("two nodes of one type hold separate capacity, allocatable or annotations")
	}
	keys := map[string]string{}
	for k := range n1.Labels {
		keys[k] = k
	}
	for k, v := range n2.Labels {
		if !sameString(keys[k], k) {
			t.Errorf("nodes hold two copies of the label key %q", k)
		}
		if k != corev1.LabelHostname && !sameString(n1.Labels[k], v) {
			t.Errorf("nodes hold two copies of the label value %s=%q", k, v)
		}
	}
	if n1.Labels[corev1.LabelHostname] != "general-00001" || n2.Labels[corev1.LabelHostname] != "general-00002" {
		t.Errorf("hostnames %q, %q: each node keeps its own", n1.Labels[corev1.LabelHostname], n2.Labels[corev1.LabelHostname])
	}
	if shared.size() == 0 {
		t.Fatal("nothing held")
	}
	runtime.KeepAlive([]any{a, b, n1, n2})
	a, b, n1, n2 = nil, nil, nil, nil //nolint:ineffassign,wastedassign // the objects become unreachable for the collector
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		runtime.GC()
		return shared.size() == 0, nil
	})
	if err != nil {
		t.Errorf("%d shared entries still held after their objects were collected", shared.size())
	}
}

// What the cache keeps per object, decoded from protobuf and transformed: the heap held for 2,000
// pods and 1,000 nodes like the fixtures above. Trimmed only, a pod is ~2,530 B and a node ~4,060 B; shared and interned ~2,130 and ~2,050;
// with the pods' container lists shared too (shareContainers) a pod is ~1,710 B.
func TestCachedObjectBytes(t *testing.T) {
	shared := newSharedMaps()
	retained := retainedBytes
	marshal := func(n int, obj func(int) interface{ Marshal() ([]byte, error) }) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			var err error
			if out[i], err = obj(i).Marshal(); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	pods := marshal(2000, func(i int) interface{ Marshal() ([]byte, error) } { return decodedPod(t, i) })
	perPod := retained(pods, func(b []byte) any {
		out, _ := shared.trimAndSharePod(roundTripBytes(t, b, &corev1.Pod{}))
		return out
	})
	nodes := marshal(1000, func(i int) interface{ Marshal() ([]byte, error) } { return decodedNode(t, i) })
	perNode := retained(nodes, func(b []byte) any {
		out, _ := shared.trimAndShareNode(roundTripBytes(t, b, &corev1.Node{}))
		return out
	})
	t.Logf("cached: %d B a pod, %d B a node", perPod, perNode)
	if perPod > 1850 || perNode > 2400 {
		t.Errorf("cached pods hold %d B each (want ≤ 1,850), nodes %d B (want ≤ 2,400)", perPod, perNode)
	}
}

// retainedBytes is the heap each decoded object holds, on average, once decode has made them all.
func retainedBytes(raw [][]byte, decode func([]byte) any) int {
	keep := make([]any, len(raw))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range raw {
		keep[i] = decode(raw[i])
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return int(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / len(raw)
}

func roundTripBytes[T interface{ Unmarshal([]byte) error }](t testing.TB, raw []byte, out T) T {
	t.Helper()
	if err := out.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	return out
}

// decodedClaim is a launched NodeClaim as the informer decodes it (JSON, as for every custom
// resource).
func decodedClaim(t testing.TB, i int) *v1.NodeClaim {
	t.Helper()
	now := metav1.NewTime(time.Unix(1765000000, 0))
	name := fmt.Sprintf("general-%05d", i)
	in := func(k string, vs ...string) v1.NodeSelectorRequirementWithMinValues {
		return v1.NodeSelectorRequirementWithMinValues{Key: k, Operator: corev1.NodeSelectorOpIn, Values: vs}
	}
	cond := func(typ string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: typ, LastTransitionTime: now}
	}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(fmt.Sprintf("9f1e-%012d", i)), ResourceVersion: fmt.Sprint(300000 + i),
		CreationTimestamp: now, Finalizers: []string{v1.TerminationFinalizer},
		Labels: map[string]string{v1.NodePoolLabelKey: "general", corev1.LabelInstanceTypeStable: "c-2x-amd64-linux", corev1.LabelTopologyZone: "zone-a",
			v1.CapacityTypeLabelKey: "on-demand", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux", v1.ProvisioningBatchLabelKey: "1765000000000"},
		Annotations:     map[string]string{v1.NodePoolHashAnnotationKey: "1234567890", v1.NodePoolHashVersionAnnotationKey: "v3"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodePool", Name: "general", UID: "pool-uid", BlockOwnerDeletion: ptrTo(true)}}},
		Spec: v1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{in(v1.NodePoolLabelKey, "general"), in(corev1.LabelInstanceTypeStable, "c-2x-amd64-linux"),
				in(corev1.LabelTopologyZone, "zone-a"), in(v1.CapacityTypeLabelKey, "on-demand"), in(corev1.LabelArchStable, "amd64")},
			Resources:    v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1750m"), corev1.ResourceMemory: resource.MustParse("1280Mi"), corev1.ResourcePods: resource.MustParse("5")}},
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}},
		Status: v1.NodeClaimStatus{NodeName: name, ProviderID: "kwok://" + name, ImageID: "kwok-image",
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1900m"), corev1.ResourceMemory: resource.MustParse("7Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []metav1.Condition{cond(v1.ConditionTypeLaunched), cond(v1.ConditionTypeRegistered), cond(v1.ConditionTypeInitialized),
				cond(v1.ConditionTypeReady), cond(v1.ConditionTypeConsolidatable)},
			LastPodEventTime: now},
	}
	raw, err := json.Marshal(nc)
	if err != nil {
		t.Fatal(err)
	}
	return claimFromJSON(t, raw)
}

func claimFromJSON(t testing.TB, raw []byte) *v1.NodeClaim {
	t.Helper()
	out := &v1.NodeClaim{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Cached claims share their annotations, requirements and resource lists and intern their strings;
// they read exactly as the decoded claim less its managed fields.
func TestCachedClaimsShareWhatClaimsHoldEqual(t *testing.T) {
	shared := newSharedMaps()
	share := func(i int) *v1.NodeClaim {
		out, err := shared.stripAndShareClaim(decodedClaim(t, i))
		if err != nil {
			t.Fatal(err)
		}
		return out.(*v1.NodeClaim)
	}
	a, b := share(1), share(2)
	if want := decodedClaim(t, 1); !equality.Semantic.DeepEqual(want, a) {
		t.Errorf("shared claim differs from the decoded one:\n%+v\n%+v", a, want)
	}
	if !sameBacking(a.Annotations, b.Annotations) || !sameBacking(a.Spec.Requirements, b.Spec.Requirements) || !sameBacking(a.Spec.Resources.Requests, b.Spec.Resources.Requests) ||
		!sameBacking(a.Status.Capacity, b.Status.Capacity) || !sameBacking(a.Status.Allocatable, b.Status.Allocatable) {
		t.Error("two claims of one pool and type hold separate annotations, requirements or resource lists")
	}
	if !sameString(a.Labels[v1.NodePoolLabelKey], b.Labels[v1.NodePoolLabelKey]) || !sameString(a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason) ||
		!sameString(a.Spec.NodeClassRef.Name, b.Spec.NodeClassRef.Name) || !sameString(a.Finalizers[0], b.Finalizers[0]) {
		t.Error("claims hold their own copies of equal strings")
	}
	if a.Status.ProviderID == b.Status.ProviderID {
		t.Error("provider IDs are each claim's own")
	}
	raw := make([][]byte, 1000)
	for i := range raw {
		var err error
		if raw[i], err = json.Marshal(decodedClaim(t, i)); err != nil {
			t.Fatal(err)
		}
	}
	perClaim := retainedBytes(raw, func(b []byte) any {
		out, _ := shared.stripAndShareClaim(claimFromJSON(t, b))
		return out
	})
	t.Logf("cached: %d B a claim", perClaim)
	if perClaim > 2500 {
		t.Errorf("cached claims hold %d B each, want ≤ 2,500 (~5,900 decoded, managed fields dropped)", perClaim)
	}
}
