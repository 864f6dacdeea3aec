// Package karpenteradoption writes what a live Karpenter v1.15 install leaves behind for Joist to adopt:
// NodePools, the NodeClaims Karpenter launched for them and their Nodes, built with Karpenter's own
// types and functions (NodePool.Hash, the provisioner's NodeClaimTemplate.ToNodeClaim, its label,
// annotation, finalizer and condition names), on instance types of Joist's KWOK catalog so that the
// KWOK cloud holds them as running instances. test/e2e's adoption test reads the YAML.
package karpenteradoption

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/awslabs/operatorpkg/status"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	karpsched "sigs.k8s.io/karpenter/pkg/scheduling"

	"github.com/joist-dev/joist/catalog"
)

// Names the e2e test refers to.
const (
	PoolDefault   = "default"   // two claims, each filled by one pod: consolidation may remove one once pods go
	PoolShortLife = "shortlife" // one claim with expireAfter ShortExpiry and consolidation off: expiry removes it
	ShortExpiry   = 4 * time.Minute
	ImageID       = "kwok-image-v1" // the KWOKNodeClass "default"'s image in test/e2e
	// Joist's KWOK cloud's marks of a running instance (cloudprovider/kwok).
	kwokInstanceLabel   = "kwok.joist.dev/instance"
	kwokImageAnnotation = "kwok.joist.dev/image-id"
)

// launchedAt is when the fixture says Karpenter launched the claims (condition times only: the
// apiserver sets creation times).
var launchedAt = metav1.NewTime(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))

// Instance picks the catalog's instance type the fixture launches: the first amd64 type by name with 4
// cpu, on its first on-demand offering.
func Instance(its []*catalog.InstanceType) (*catalog.InstanceType, catalog.Offering, error) {
	sort.Slice(its, func(i, j int) bool { return its[i].Name < its[j].Name })
	for _, it := range its {
		cpu := it.Capacity[corev1.ResourceCPU]
		if cpu.Cmp(resource.MustParse("4")) != 0 || it.Labels[corev1.LabelArchStable] != "amd64" {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == karpv1.CapacityTypeOnDemand && o.Available {
				return it, o, nil
			}
		}
	}
	return nil, catalog.Offering{}, fmt.Errorf("no 4-cpu amd64 on-demand instance type in the catalog")
}

func nodePool(name string, it *catalog.InstanceType, o catalog.Offering, expireAfter string, consolidateAfter string) *karpv1.NodePool {
	np := &karpv1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
					{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
					{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{it.Name}},
					{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{o.CapacityType}},
					{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{o.Zone}},
				},
				NodeClassRef: &karpv1.NodeClassReference{Group: "kwok.joist.dev", Kind: "KWOKNodeClass", Name: "default"},
				ExpireAfter:  karpv1.MustParseNillableDuration(expireAfter),
			}},
			Disruption: karpv1.Disruption{
				ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    karpv1.MustParseNillableDuration(consolidateAfter),
				Budgets:             []karpv1.Budget{{Nodes: "10%"}},
			},
		},
	}
	// What Karpenter's nodepool hash controller stamps.
	np.Annotations = map[string]string{
		karpv1.NodePoolHashAnnotationKey:        np.Hash(),
		karpv1.NodePoolHashVersionAnnotationKey: karpv1.NodePoolHashVersion,
	}
	return np
}

// upstreamInstanceType is the catalog type as Karpenter's cloud provider would describe it.
func upstreamInstanceType(it *catalog.InstanceType, o catalog.Offering) *cloudprovider.InstanceType {
	reqs := karpsched.NewRequirements(
		karpsched.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, it.Name),
		karpsched.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, it.Labels[corev1.LabelArchStable]),
		karpsched.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux"),
	)
	return &cloudprovider.InstanceType{
		Name:         it.Name,
		Requirements: reqs,
		Capacity:     it.Capacity,
		Offerings: cloudprovider.Offerings{{
			Requirements: karpsched.NewRequirements(
				karpsched.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, o.CapacityType),
				karpsched.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, o.Zone),
			),
			Price: o.Price, Available: true,
		}},
	}
}

// launched is the claim Karpenter's provisioner creates for np, after its lifecycle controller
// launched, registered and initialized it, and the Node it registered.
func launched(np *karpv1.NodePool, name string, it *catalog.InstanceType, o catalog.Offering) (*karpv1.NodeClaim, *corev1.Node) {
	tmpl := scheduling.NewNodeClaimTemplate(np)
	tmpl.InstanceTypeOptions = cloudprovider.InstanceTypes{upstreamInstanceType(it, o)}
	nc := tmpl.ToNodeClaim()
	nc.TypeMeta = metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim"}
	nc.GenerateName, nc.Name = "", name
	nc.OwnerReferences[0].UID = "" // the live NodePool's UID is filled in by the test
	nc.Finalizers = []string{karpv1.TerminationFinalizer}
	// Karpenter's requirement set is a map: its order differs run to run; the fixture sorts it by key.
	sort.Slice(nc.Spec.Requirements, func(i, j int) bool { return nc.Spec.Requirements[i].Key < nc.Spec.Requirements[j].Key })
	for k, v := range map[string]string{
		corev1.LabelInstanceTypeStable: it.Name, corev1.LabelTopologyZone: o.Zone, karpv1.CapacityTypeLabelKey: o.CapacityType,
		corev1.LabelArchStable: it.Labels[corev1.LabelArchStable], corev1.LabelOSStable: "linux",
	} {
		nc.Labels[k] = v
	}
	allocatable := it.Allocatable()
	nc.Status = karpv1.NodeClaimStatus{
		ProviderID: "kwok://" + name, NodeName: name, ImageID: ImageID,
		Capacity: it.Capacity, Allocatable: allocatable,
	}
	for _, c := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized, "Ready"} {
		nc.Status.Conditions = append(nc.Status.Conditions, statusCondition(c))
	}
	node := &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{corev1.LabelHostname: name, karpv1.NodeRegisteredLabelKey: "true", karpv1.NodeInitializedLabelKey: "true", kwokInstanceLabel: it.Name},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", kwokImageAnnotation: ImageID},
			Finalizers:  []string{karpv1.TerminationFinalizer},
		},
		Spec:   corev1.NodeSpec{ProviderID: "kwok://" + name},
		Status: corev1.NodeStatus{Capacity: it.Capacity, Allocatable: allocatable},
	}
	for k, v := range nc.Labels {
		node.Labels[k] = v
	}
	return nc, node
}

func statusCondition(t string) status.Condition {
	return status.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, LastTransitionTime: launchedAt}
}

// YAML is the fixture: the NodePools, then each claim and its Node.
func YAML(its []*catalog.InstanceType) ([]byte, error) {
	it, o, err := Instance(its)
	if err != nil {
		return nil, err
	}
	def := nodePool(PoolDefault, it, o, "720h", "0s")
	short := nodePool(PoolShortLife, it, o, ShortExpiry.String(), "Never")
	objs := []runtime.Object{def, short}
	for _, c := range []struct {
		np   *karpv1.NodePool
		name string
	}{{def, "default-k7x2p"}, {def, "default-q9m4t"}, {short, "shortlife-z3v8n"}} {
		nc, node := launched(c.np, c.name, it, o)
		objs = append(objs, nc, node)
	}
	var out bytes.Buffer
	out.WriteString("# Generated by bench/upstream/karpenteradoption (Karpenter v1.15.0's own types and functions); do not edit.\n")
	for _, obj := range objs {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("marshalling %s: %w", obj.GetObjectKind().GroupVersionKind(), err)
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return out.Bytes(), nil
}
