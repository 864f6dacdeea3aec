package podmetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestPodsState(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "general-abc", Labels: map[string]string{
		"karpenter.sh/nodepool": "general", "topology.kubernetes.io/zone": "zone-a", "kubernetes.io/arch": "amd64",
		"karpenter.sh/capacity-type": "spot", "node.kubernetes.io/instance-type": "c-4x",
	}}}
	running := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7f", UID: "u", Controller: ptr.To(true)}}},
		Spec:   corev1.PodSpec{NodeName: "general-abc"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "team"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	c := &Collector{kube: fake.NewClientBuilder().WithObjects(node, running, pending).Build()}
	want := `
# HELP karpenter_pods_state Pod state is the current state of pods, labeled by pod name, namespace, owner, node, whether the pod is scheduled, nodepool, zone, architecture, capacity type, instance type, phase, readiness, and whether the node is Joist-managed.
# TYPE karpenter_pods_state gauge
karpenter_pods_state{arch="",capacity_type="",instance_type="",managed="false",name="bare",namespace="team",node="",nodepool="",owner="",phase="Pending",ready="false",scheduled="false",zone=""} 1
karpenter_pods_state{arch="amd64",capacity_type="spot",instance_type="c-4x",managed="true",name="web-1",namespace="default",node="general-abc",nodepool="general",owner="/apis/apps/v1/namespaces/default/replicasets/web-7f",phase="Running",ready="true",scheduled="true",zone="zone-a"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "karpenter_pods_state"); err != nil {
		t.Error(err)
	}
}

// TestNodePodSums checks karpenter_nodes_total_pod_requests and …_total_daemon_requests: bound pods that
// have not finished are summed per node (init containers by their maximum), DaemonSet pods also apart.
func TestNodePodSums(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{
		"karpenter.sh/nodepool": "general", "topology.kubernetes.io/zone": "zone-a", "node.kubernetes.io/instance-type": "c-4x",
	}}}
	pod := func(name, cpu string, daemon bool, phase corev1.PodPhase) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			}}}},
			Status: corev1.PodStatus{Phase: phase},
		}
		if daemon {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "d", Controller: ptr.To(true)}}
		}
		return p
	}
	c := &Collector{kube: fake.NewClientBuilder().WithObjects(node,
		pod("web", "1500m", false, corev1.PodRunning), pod("agent", "250m", true, corev1.PodRunning),
		pod("done", "8", false, corev1.PodSucceeded)).Build()}
	want := `
# HELP karpenter_nodes_total_daemon_requests Sum of the requests of the DaemonSet pods bound to the node, by resource type and the node's well-known labels.
# TYPE karpenter_nodes_total_daemon_requests gauge
karpenter_nodes_total_daemon_requests{arch="",capacity_type="",instance_type="c-4x",managed="true",node_name="n1",nodepool="general",os="",phase="",region="",resource_type="cpu",windows_build="",zone="zone-a"} 0.25
# HELP karpenter_nodes_total_pod_requests Sum of the requests of the pods bound to the node (DaemonSet pods included), by resource type and the node's well-known labels.
# TYPE karpenter_nodes_total_pod_requests gauge
karpenter_nodes_total_pod_requests{arch="",capacity_type="",instance_type="c-4x",managed="true",node_name="n1",nodepool="general",os="",phase="",region="",resource_type="cpu",windows_build="",zone="zone-a"} 1.75
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "karpenter_nodes_total_pod_requests", "karpenter_nodes_total_daemon_requests"); err != nil {
		t.Error(err)
	}
}

// A plain pod's requests and limits (its containers', no init containers, overhead or pod-level
// resources) are added into its node's sums without building lists of its own: PodRequests and
// PodLimits allocated four resource lists per pod and scrape (~1.8 KB a pod; 95 MB of the heap at
// the 50,000-pod peak of make bench-scale was one scrape's node sums and samples).
func TestNodeSumsAllocateNothingPerPlainPod(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("350m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
			}},
			{Name: "b", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}},
		}}}
	s := &nodeSums{}
	s.add(pod) // the node's lists, once
	if allocs := testing.AllocsPerRun(100, func() { s.add(pod) }); allocs != 0 {
		t.Errorf("adding a plain pod to its node's sums allocated %.0f times, want 0", allocs)
	}
	if got := s.requests[corev1.ResourceCPU]; got.MilliValue() != 102*400 {
		t.Errorf("cpu requests %s after 102 adds, want %dm", got.String(), 102*400)
	}
	if got := s.limits[corev1.ResourceMemory]; got.Value() != 102*512<<20 {
		t.Errorf("memory limits %s after 102 adds, want %d", got.String(), 102*512<<20)
	}
}
