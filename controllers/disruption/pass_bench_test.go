package disruption

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/snapshot"
	"github.com/joist-dev/joist/solver"
	"github.com/joist-dev/joist/test/env"
)

// memCache is an in-memory stand-in for the manager's informer cache, read the way controller-runtime's
// cache reader reads (List copies each object unless UnsafeDisableDeepCopy, then sets the list's
// items), with writes applied in place. It counts List calls, which with the real cache would be
// apiserver reads when uncached.
type memCache struct {
	client.Client // nil: any other call panics
	scheme        *runtime.Scheme
	mu            sync.Mutex
	objs          map[string]map[string]client.Object // kind → namespace/name
	rv            int64
	lists         atomic.Int64
}

func newMemCache(objs ...client.Object) *memCache {
	m := &memCache{scheme: env.DefaultScheme(), objs: map[string]map[string]client.Object{}}
	for _, o := range objs {
		m.put(o)
	}
	return m
}

func (m *memCache) kind(o runtime.Object) string {
	gvk, err := apiutil.GVKForObject(o, m.scheme)
	if err != nil {
		panic(err)
	}
	return strings.TrimSuffix(gvk.Kind, "List")
}

func (m *memCache) put(o client.Object) {
	m.rv++
	o.SetResourceVersion(strconv.FormatInt(m.rv, 10))
	k := m.kind(o)
	if m.objs[k] == nil {
		m.objs[k] = map[string]client.Object{}
	}
	m.objs[k][o.GetNamespace()+"/"+o.GetName()] = o.DeepCopyObject().(client.Object)
}

func (m *memCache) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	m.lists.Add(1)
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []runtime.Object
	for _, o := range m.objs[m.kind(list)] {
		if lo.UnsafeDisableDeepCopy == nil || !*lo.UnsafeDisableDeepCopy {
			o = o.DeepCopyObject().(client.Object)
		}
		out = append(out, o)
	}
	return meta.SetList(list, out)
}

func (m *memCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[m.kind(obj)][key.Namespace+"/"+key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: m.kind(obj)}, key.Name)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o.DeepCopyObject()).Elem())
	return nil
}

func (m *memCache) write(obj client.Object) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.put(obj)
	obj.SetResourceVersion(strconv.FormatInt(m.rv, 10))
	return nil
}

func (m *memCache) Create(_ context.Context, obj client.Object, _ ...client.CreateOption) error {
	return m.write(obj)
}

func (m *memCache) Patch(_ context.Context, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
	return m.write(obj)
}

func (m *memCache) Delete(_ context.Context, obj client.Object, _ ...client.DeleteOption) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objs[m.kind(obj)], obj.GetNamespace()+"/"+obj.GetName())
	return nil
}

func (m *memCache) Status() client.SubResourceWriter { return memStatus{m} }

type memStatus struct{ m *memCache }

func (s memStatus) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return nil
}
func (s memStatus) Update(_ context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
	return s.m.write(obj)
}

// Patch applies a merge patch to the stored object as the apiserver does and answers with the result
// in obj (a status patch may send only the fields it writes); other patch types write obj whole.
func (s memStatus) Patch(_ context.Context, obj client.Object, patch client.Patch, _ ...client.SubResourcePatchOption) error {
	if patch.Type() != ktypes.MergePatchType {
		return s.m.write(obj)
	}
	data, err := patch.Data(obj)
	if err != nil {
		return err
	}
	s.m.mu.Lock()
	stored, ok := s.m.objs[s.m.kind(obj)][obj.GetNamespace()+"/"+obj.GetName()]
	s.m.mu.Unlock()
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: s.m.kind(obj)}, obj.GetName())
	}
	var doc, p any
	base, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(base, &doc); err != nil {
		return err
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	merged, err := json.Marshal(mergePatch(doc, p))
	if err != nil {
		return err
	}
	fresh := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
	if err := json.Unmarshal(merged, fresh); err != nil {
		return err
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(fresh).Elem())
	return s.m.write(obj)
}

// mergePatch applies JSON merge patch p (RFC 7386) to doc.
func mergePatch(doc, p any) any {
	pm, ok := p.(map[string]any)
	if !ok {
		return p
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(dm, k)
		} else {
			dm[k] = mergePatch(dm[k], v)
		}
	}
	return dm
}

func (s memStatus) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return nil
}

// cacheSnapshot builds the solver input from the cache as the provisioner's ClusterSnapshot does
// (deep-copying lists, then snapshot.Build), so the pass pays what it pays in the manager.
type cacheSnapshot struct{ m *memCache }

func (s cacheSnapshot) ClusterSnapshot(ctx context.Context) (solver.Input, error) {
	var (
		pools  v1.NodePoolList
		claims v1.NodeClaimList
		nodes  corev1.NodeList
		pods   corev1.PodList
	)
	for _, l := range []client.ObjectList{&pools, &claims, &nodes, &pods} {
		if err := s.m.List(ctx, l); err != nil {
			return solver.Input{}, err
		}
	}
	its := catalog.Default()
	snap, err := snapshot.Build(snapshot.Cluster{NodePools: pointers(pools.Items), NodeClaims: pointers(claims.Items), Nodes: pointers(nodes.Items),
		Pods: pointers(pods.Items)}, snapshot.Options{InstanceTypes: func(*v1.NodePool) ([]*catalog.InstanceType, error) { return its, nil },
		ReadyNodePoolsOnly: true})
	if err != nil {
		return solver.Input{}, err
	}
	return snap.Input, nil
}

// fullCluster is n full 2-cpu nodes (five 350m pods each), every claim settled: a pass has nothing
// to do.
func fullCluster(n int) []client.Object {
	long := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second)) // as the apiserver stores times
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}, Spec: v1.NodePoolSpec{
		Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: "joist.dev/instance-cpu", Operator: corev1.NodeSelectorOpIn, Values: []string{"2"}},
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}},
				{Key: "joist.dev/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"c"}}},
			NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"}}},
		Disruption: v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
			ConsolidateAfter: v1.MustParseNillableDuration("0s"), Budgets: []v1.Budget{{Nodes: "10%"}}}}}
	np.SetCondition(v1.ConditionTypeReady, metav1.ConditionTrue, "Ready", "")
	objs := []client.Object{np, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("3389Mi"),
		corev1.ResourcePods: resource.MustParse("32")}
	for i := range n {
		name := fmt.Sprintf("node-%05d", i)
		labels := map[string]string{v1.NodePoolLabelKey: "general", corev1.LabelInstanceTypeStable: "c-2x-arm64-linux",
			corev1.LabelTopologyZone: catalog.Zones[0], v1.CapacityTypeLabelKey: v1.CapacityTypeOnDemand, corev1.LabelArchStable: "arm64",
			corev1.LabelOSStable: "linux", "joist.dev/instance-cpu": "2", corev1.LabelHostname: name}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: long},
			Spec: corev1.NodeSpec{ProviderID: "kwok://" + name},
			Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: long,
			Annotations: map[string]string{v1.NodePoolHashAnnotationKey: np.Hash(), v1.NodePoolHashVersionAnnotationKey: v1.NodePoolHashVersion}},
			Spec:   v1.NodeClaimSpec{Requirements: np.Spec.Template.Spec.Requirements, NodeClassRef: np.Spec.Template.Spec.NodeClassRef},
			Status: v1.NodeClaimStatus{NodeName: name, ProviderID: "kwok://" + name, Capacity: alloc, Allocatable: alloc}}
		for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
			nc.SetCondition(c, metav1.ConditionTrue, c, "")
		}
		for i := range nc.Status.Conditions {
			nc.Status.Conditions[i].LastTransitionTime = long
		}
		objs = append(objs, node, nc)
		for j := range 5 {
			objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-p%d", name, j), Namespace: "default",
				UID: ktypes.UID(fmt.Sprintf("%s-%d", name, j)), CreationTimestamp: long, Labels: map[string]string{"app": "scale"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "scale", UID: "rs", Controller: ptrTrue()}}},
				Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("350m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}})
		}
	}
	return objs
}

// processCPU is the user and system CPU time the test process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ptrTrue() *bool { t := true; return &t }

// BenchmarkIdlePass is one disruption pass over a settled cluster of full nodes (nothing to do), at
// 1,000 and 5,000 nodes: the target is 100 ms and 1 s. It reports the reads per pass,
// which must not grow with the cluster.
func BenchmarkIdlePass(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			m := newMemCache(fullCluster(n)...)
			c := New(m, m, noDrift{}, cacheSnapshot{m}, nil, events.NewFakeRecorder(1000), clock.RealClock{}, DefaultOptions())
			ctx := context.Background()
			for range 2 { // the first passes write what they observed (lastPodEventTime, Consolidatable)
				if err := c.Reconcile(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if len(c.commands) > 0 {
				b.Fatalf("a pass over full nodes started %d commands, the first %s", len(c.commands), c.commands[0].message)
			}
			rv := m.rv
			m.lists.Store(0)
			b.ReportAllocs()
			cpu0 := processCPU(b)
			b.ResetTimer()
			for range b.N {
				if err := c.Reconcile(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			// Wall time per pass depends on the machine's load; the process's CPU time (GC included)
			// much less.
			b.ReportMetric(float64((processCPU(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/pass")
			if m.rv != rv {
				b.Errorf("idle passes wrote %d times", m.rv-rv)
			}
			b.ReportMetric(float64(m.lists.Load())/float64(b.N), "lists/pass")
		})
	}
}
