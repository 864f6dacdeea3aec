package snapshot

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/joist-dev/joist/api/policy/v1alpha1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/solver"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func testTypes() []*catalog.InstanceType {
	return []*catalog.InstanceType{{
		Name: "m.xlarge", Capacity: rl("cpu", "4", "memory", "16Gi", "pods", "110"),
		Labels:    map[string]string{v1.LabelArch: "amd64"},
		Offerings: []catalog.Offering{{Zone: "z1", CapacityType: v1.CapacityTypeOnDemand, Price: 0.2, Available: true}},
	}}
}

func opts() Options {
	return Options{InstanceTypes: func(*v1.NodePool) ([]*catalog.InstanceType, error) { return testTypes(), nil }}
}

func nodePool(name string, limits ...string) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if len(limits) > 0 {
		np.Spec.Limits = v1.Limits(rl(limits...))
	}
	return np
}

func node(name, pool string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if pool != "" {
		n.Labels[v1.NodePoolLabelKey] = pool
	}
	n.Spec.ProviderID = "kwok://" + name
	n.Status.Capacity = rl("cpu", "4", "memory", "16Gi", "pods", "110")
	n.Status.Allocatable = rl("cpu", "3800m", "memory", "15Gi", "pods", "110")
	return n
}

func claim(name, pool, nodeName string) *v1.NodeClaim {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: pool}}}
	nc.Spec.Resources.Requests = rl("cpu", "2", "memory", "8Gi")
	if nodeName != "" {
		nc.Status.ProviderID = "kwok://" + nodeName
		nc.Status.NodeName = nodeName
		nc.Status.Capacity = rl("cpu", "4", "memory", "16Gi")
	}
	return nc
}

func pendingPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: StableUID("pod", "default", name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1")}}}}}
}

func TestBuildLimitsCountClaimsAndUnclaimedNodes(t *testing.T) {
	gr := policyv1alpha1.Guardrail{ObjectMeta: metav1.ObjectMeta{Name: "platform"},
		Spec: policyv1alpha1.GuardrailSpec{ClusterLimits: &policyv1alpha1.ClusterLimits{CPU: ptr.To(resource.MustParse("14"))}}}
	c := Cluster{
		NodePools:  []*v1.NodePool{nodePool("a", "cpu", "20"), nodePool("b")},
		Nodes:      []*corev1.Node{node("n1", "a"), node("dumped", "a"), node("other", "")},
		NodeClaims: []*v1.NodeClaim{claim("a-1", "a", "n1"), claim("a-2", "a", "")},
		Guardrails: []policyv1alpha1.Guardrail{gr},
		Pods:       []*corev1.Pod{pendingPod("p")},
	}
	s, err := Build(c, opts())
	if err != nil {
		t.Fatal(err)
	}
	// Pool a: claim a-1 (4 launched) + claim a-2 (2 requested) + node "dumped" without a claim (4).
	if got := s.Usage["a"][corev1.ResourceCPU]; got.Cmp(resource.MustParse("10")) != 0 {
		t.Errorf("usage of a = %s cpu, want 10", got.String())
	}
	// Cluster: 14 - 10 = 4 left, below pool a's 20 - 10 = 10 and pool b's unlimited.
	for _, pi := range s.Input.NodePools {
		if got := pi.Remaining[corev1.ResourceCPU]; got.Cmp(resource.MustParse("4")) != 0 {
			t.Errorf("remaining of %s = %s cpu, want 4 (the Guardrail's headroom)", pi.NodePool.Name, got.String())
		}
	}
	var inFlight, existing int
	for _, n := range s.Input.Nodes {
		if n.InFlight {
			inFlight++
			if n.Name != "a-2" || n.NodePool != "a" {
				t.Errorf("in-flight node %+v, want claim a-2 of pool a", n)
			}
		} else {
			existing++
			if n.Name == "n1" && n.NodeClaim != "a-1" {
				t.Errorf("node n1 paired with claim %q, want a-1", n.NodeClaim)
			}
		}
	}
	if inFlight != 1 || existing != 3 {
		t.Errorf("nodes: %d in flight, %d existing; want 1 and 3", inFlight, existing)
	}
	two := solver.NodeClaimPlan{NodePool: "b", InstanceType: testTypes()[0]}
	admitted, blocked := s.Admit([]solver.NodeClaimPlan{two, two})
	if len(admitted) != 1 || len(blocked) != 1 || blocked[0].Reason == "" {
		t.Errorf("admit: %d admitted, %d blocked; want one of two 4-cpu nodes within 4 cpu", len(admitted), len(blocked))
	}
	if again, _ := s.Admit([]solver.NodeClaimPlan{two}); len(again) != 1 {
		t.Error("Admit must not consume the snapshot's headroom")
	}
}

func TestBuildPodsAndNominations(t *testing.T) {
	bound := pendingPod("bound")
	bound.Spec.NodeName = "n1"
	done := pendingPod("done")
	done.Spec.NodeName = "n1"
	done.Status.Phase = corev1.PodSucceeded
	joist := pendingPod("joist")
	preempt := pendingPod("preempt") // the kube-scheduler nominated it to an existing node
	preempt.Status.NominatedNodeName = "other"
	stale := pendingPod("stale") // Joist's own nomination, no longer holding
	stale.Status.NominatedNodeName = "other"
	c := Cluster{
		NodePools:  []*v1.NodePool{nodePool("a")},
		Nodes:      []*corev1.Node{node("n1", "a"), node("other", "")},
		NodeClaims: []*v1.NodeClaim{claim("a-1", "a", "n1"), claim("a-2", "a", "")},
		Pods:       []*corev1.Pod{bound, done, joist, preempt, stale, pendingPod("free")},
	}
	o := opts()
	o.Nomination = func(pod *corev1.Pod, _ string, live map[string]bool) (string, bool) {
		return "a-2", pod.Name == "joist" && live["a-2"]
	}
	o.OwnNomination = func(pod *corev1.Pod) bool { return pod.Name == "stale" }
	s, err := Build(c, o)
	if err != nil {
		t.Fatal(err)
	}
	var pending []string
	for _, p := range s.Pending {
		pending = append(pending, p.Name)
	}
	if len(pending) != 2 || pending[0] != "stale" || pending[1] != "free" {
		t.Errorf("pending = %v, want [stale free]", pending)
	}
	if len(s.Preempting) != 1 || s.Preempting[0].Name != "preempt" {
		t.Errorf("preempting = %v, want [preempt]", s.Preempting)
	}
	for _, n := range s.Input.Nodes {
		switch n.Name {
		case "n1":
			if len(n.Pods) != 1 || n.Pods[0].Name != "bound" {
				t.Errorf("n1 pods = %d, want only the bound running pod", len(n.Pods))
			}
		case "a-2":
			if len(n.Pods) != 1 || n.Pods[0].Name != "joist" {
				t.Errorf("in-flight a-2 pods = %d, want the pod Joist nominated to it", len(n.Pods))
			}
		}
	}
}

func TestVolumeZones(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	immediate := storagev1.VolumeBindingImmediate
	classes := []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, VolumeBindingMode: &wffc, AllowedTopologies: []corev1.TopologySelectorTerm{{
			MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "topology.ebs.csi.aws.com/zone", Values: []string{"z2", "z1"}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "anywhere", Annotations: map[string]string{defaultClassAnnotation: "true"}}, VolumeBindingMode: &wffc},
		{ObjectMeta: metav1.ObjectMeta{Name: "immediate"}, VolumeBindingMode: &immediate, AllowedTopologies: []corev1.TopologySelectorTerm{{
			MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: v1.LabelTopologyZone, Values: []string{"z3"}}}}}},
	}
	pvc := func(name, class, volume string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
		if class != "" {
			c.Spec.StorageClassName = &class
		}
		return c
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-csi"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{
		Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "topology.ebs.csi.aws.com/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z4"}}}}}}}}}
	p := pendingPod("p")
	for _, claim := range []string{"bound", "waiting", "default-class", "immediate", "missing"} {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
	got := volumeZones([]*corev1.Pod{p}, newVolumeIndex(Cluster{
		StorageClasses:         classes,
		PersistentVolumes:      []*corev1.PersistentVolume{pv},
		PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{pvc("bound", "zonal", "pv-csi"), pvc("waiting", "zonal", ""), pvc("default-class", "", ""), pvc("immediate", "immediate", "")},
	}))
	want := map[string]string{"default/bound": "[z4]", "default/waiting": "[z1 z2]"}
	if len(got) != len(want) {
		t.Errorf("volume zones = %v, want %v", got, want)
	}
	for k, w := range want {
		if g := got[k]; len(g) == 0 || fmtList(g) != w {
			t.Errorf("%s: zones %v, want %s", k, g, w)
		}
	}
}

func fmtList(v []string) string {
	s := "["
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s + "]"
}

// A pod nominated to a Node named otherwise than its claim (EC2 names Nodes after the instance)
// is handed to the nomination callback as that claim, so a restart re-adopts it.
func TestNominationResolvesTheNodesClaim(t *testing.T) {
	byNode := pendingPod("by-node")
	byNode.Status.NominatedNodeName = "ip-10-0-0-1.ec2.internal"
	byClaim := pendingPod("by-claim")
	byClaim.Status.NominatedNodeName = "a-2"
	c := Cluster{
		NodePools:  []*v1.NodePool{nodePool("a")},
		Nodes:      []*corev1.Node{node("ip-10-0-0-1.ec2.internal", "a")},
		NodeClaims: []*v1.NodeClaim{claim("a-1", "a", "ip-10-0-0-1.ec2.internal"), claim("a-2", "a", "")},
		Pods:       []*corev1.Pod{byNode, byClaim},
	}
	got := map[string]string{}
	o := opts()
	o.Nomination = func(pod *corev1.Pod, nominated string, live map[string]bool) (string, bool) {
		got[pod.Name] = nominated
		return nominated, live[nominated]
	}
	s, err := Build(c, o)
	if err != nil {
		t.Fatal(err)
	}
	if got["by-node"] != "a-1" || got["by-claim"] != "a-2" {
		t.Errorf("nominated claims = %v, want by-node→a-1, by-claim→a-2", got)
	}
	if len(s.Pending) != 0 || len(s.Preempting) != 0 {
		t.Errorf("pending %d, preempting %d: both pods should count as placed on their claims", len(s.Pending), len(s.Preempting))
	}
}
