package main

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	v1 "github.com/joist-dev/joist/api/v1"
)

// hashCases is how many random objects each property test hashes both ways (issue 19: ≥ 10,000).
const hashCases = 10000

// TestNodePoolHashIsKarpenters: for random NodePools over every template field (and the behaviour
// fields that must not change it), Joist's NodePool.Hash equals Karpenter v1.15's. Both sides read
// the same JSON, as both controllers read the object from the apiserver. Equal values mean a claim
// either one stamped is not drifted by the other's check (both compare the stamped value with this
// hash under the same version, v3).
func TestNodePoolHashIsKarpenters(t *testing.T) {
	if v1.NodePoolHashVersion != karpv1.NodePoolHashVersion {
		t.Fatalf("hash version %q, Karpenter's %q", v1.NodePoolHashVersion, karpv1.NodePoolHashVersion)
	}
	r := rand.New(rand.NewSource(19))
	distinct := map[string]bool{}
	for i := range hashCases {
		data, err := json.Marshal(randomNodePool(r))
		if err != nil {
			t.Fatal(err)
		}
		joist, upstream := &v1.NodePool{}, &karpv1.NodePool{}
		if err := json.Unmarshal(data, joist); err != nil {
			t.Fatalf("case %d: %v\n%s", i, err, data)
		}
		if err := json.Unmarshal(data, upstream); err != nil {
			t.Fatalf("case %d: %v\n%s", i, err, data)
		}
		got, want := joist.Hash(), upstream.Hash()
		if got != want {
			t.Fatalf("case %d: Joist's hash %s, Karpenter's %s for\n%s", i, got, want, data)
		}
		distinct[got] = true
	}
	// A generator that produced the same pool every time would prove nothing.
	if len(distinct) < hashCases*9/10 {
		t.Errorf("only %d distinct hashes in %d random pools", len(distinct), hashCases)
	}
}

// The sample pool of issue 19, through Karpenter's own function: the figure the api/v1 test pins.
func TestSampleNodePoolHash(t *testing.T) {
	np, err := nodePool(&v1.NodePool{Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		NodeClassRef: &v1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"},
		ExpireAfter:  v1.MustParseNillableDuration("720h"),
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := np.Hash(); got != "329923811497465139" {
		t.Errorf("Karpenter's hash of the sample template = %s", got)
	}
}

var (
	hashKeys    = []string{"team", "example.com/tier", "app.kubernetes.io/part-of", "cost-center", "gpu", "zone-pin", "owner"}
	hashValues  = []string{"", "a", "b", "platform", "batch", "true", "0", "x-y_z.1"}
	taintEffect = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	durations   = []string{"30s", "1m", "90m", "1h30m", "24h", "720h", "168h", "2h0m30s"}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.Intn(len(xs))] }

// randomStringMap is nil, empty or a few entries (values may be empty strings).
func randomStringMap(r *rand.Rand) map[string]string {
	switch r.Intn(4) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	m := map[string]string{}
	for range 1 + r.Intn(4) {
		m[pick(r, hashKeys)] = pick(r, hashValues)
	}
	return m
}

func randomTaints(r *rand.Rand) []corev1.Taint {
	if r.Intn(3) == 0 {
		return nil
	}
	var ts []corev1.Taint
	for range r.Intn(4) {
		t := corev1.Taint{Key: pick(r, hashKeys), Value: pick(r, hashValues), Effect: pick(r, taintEffect)}
		if r.Intn(5) == 0 {
			at := metav1.NewTime(time.Unix(1.7e9+r.Int63n(1e8), 0))
			t.TimeAdded = &at
		}
		ts = append(ts, t)
	}
	return ts
}

func randomNillable(r *rand.Rand) v1.NillableDuration {
	switch r.Intn(5) {
	case 0:
		return v1.NillableDuration{}
	case 1:
		return v1.MustParseNillableDuration(v1.Never)
	}
	return v1.MustParseNillableDuration(pick(r, durations))
}

func randomRequirements(r *rand.Rand) []v1.NodeSelectorRequirementWithMinValues {
	var reqs []v1.NodeSelectorRequirementWithMinValues
	for range r.Intn(4) {
		req := v1.NodeSelectorRequirementWithMinValues{Key: pick(r, hashKeys), Operator: corev1.NodeSelectorOpIn, Values: []string{pick(r, hashValues[1:]), pick(r, hashValues[1:])}}
		switch r.Intn(4) {
		case 0:
			req.Operator, req.Values = corev1.NodeSelectorOpExists, nil
		case 1:
			req.Operator, req.Values = corev1.NodeSelectorOpGt, []string{fmt.Sprint(r.Intn(64))}
		case 2:
			n := 1 + r.Intn(2)
			req.MinValues = &n
		}
		reqs = append(reqs, req)
	}
	return reqs
}

// randomNodePool sets every template field at random, and the behaviour fields too.
func randomNodePool(r *rand.Rand) *v1.NodePool {
	np := &v1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pool-%d", r.Intn(1000))},
	}
	t := &np.Spec.Template
	t.Labels, t.Annotations = randomStringMap(r), randomStringMap(r)
	t.Spec.Taints, t.Spec.StartupTaints = randomTaints(r), randomTaints(r)
	t.Spec.Requirements = randomRequirements(r)
	if r.Intn(6) != 0 {
		t.Spec.NodeClassRef = &v1.NodeClassReference{
			Group: pick(r, []string{"karpenter.k8s.aws", "kwok.joist.dev", "karpenter.azure.com"}),
			Kind:  pick(r, []string{"EC2NodeClass", "KWOKNodeClass", "AKSNodeClass"}),
			Name:  pick(r, []string{"default", "gpu", "al2023", "bottlerocket"}),
		}
	}
	t.Spec.ExpireAfter = randomNillable(r)
	if r.Intn(3) == 0 {
		t.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Duration(r.Intn(48*3600)) * time.Second}
	}
	// Behaviour: must not matter.
	if r.Intn(2) == 0 {
		w := int32(r.Intn(101))
		np.Spec.Weight = &w
	}
	if r.Intn(2) == 0 {
		np.Spec.Limits = v1.Limits{corev1.ResourceCPU: *resource.NewQuantity(int64(r.Intn(5000)), resource.DecimalSI)}
	}
	np.Spec.Disruption.ConsolidationPolicy = pick(r, []v1.ConsolidationPolicy{"", v1.ConsolidationPolicyWhenEmpty, v1.ConsolidationPolicyWhenEmptyOrUnderutilized})
	np.Spec.Disruption.ConsolidateAfter = randomNillable(r)
	for range r.Intn(3) {
		np.Spec.Disruption.Budgets = append(np.Spec.Disruption.Budgets, v1.Budget{Nodes: fmt.Sprintf("%d%%", r.Intn(100))})
	}
	return np
}
