package main

import (
	"encoding/json"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/scheduling"
	"sigs.k8s.io/karpenter/pkg/utils/daemonset"

	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
)

// instanceType converts a Joist instance type into upstream's: the same name, capacity and overhead
// (as kube-reserved, so upstream's allocatable equals Joist's), one requirement per label, and one
// offering per Joist offering with the same zone, capacity type, price and availability.
func instanceType(it *catalog.InstanceType) *cloudprovider.InstanceType {
	zones, capacityTypes := map[string]bool{}, map[string]bool{}
	offerings := make(cloudprovider.Offerings, 0, len(it.Offerings))
	for _, o := range it.Offerings {
		offerings = append(offerings, &cloudprovider.Offering{
			Requirements: scheduling.NewLabelRequirements(map[string]string{
				v1.LabelTopologyZone:    o.Zone,
				v1.CapacityTypeLabelKey: o.CapacityType,
			}),
			Price:     o.Price,
			Available: o.Available,
		})
		if o.Available {
			zones[o.Zone], capacityTypes[o.CapacityType] = true, true
		}
	}
	reqs := scheduling.NewRequirements(
		scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, it.Name),
		scheduling.NewRequirement(v1.LabelTopologyZone, corev1.NodeSelectorOpIn, keys(zones)...),
		scheduling.NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, keys(capacityTypes)...),
	)
	for _, k := range sortedLabelKeys(it.Labels) {
		reqs.Add(scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, it.Labels[k]))
	}
	return &cloudprovider.InstanceType{
		Name:         it.Name,
		Requirements: reqs,
		Offerings:    offerings,
		Capacity:     it.Capacity.DeepCopy(),
		Overhead:     &cloudprovider.InstanceTypeOverhead{KubeReserved: it.Overhead.DeepCopy()},
	}
}

func instanceTypes(its []*catalog.InstanceType) []*cloudprovider.InstanceType {
	out := make([]*cloudprovider.InstanceType, 0, len(its))
	for _, it := range its {
		out = append(out, instanceType(it))
	}
	return out
}

// nodePool converts through JSON: Joist's api/v1 is wire-compatible with karpenter.sh/v1. Upstream
// skips NodePools that are not Ready, so the conditions its test fixtures set are added.
func nodePool(np *v1.NodePool) (*karpv1.NodePool, error) {
	raw, err := json.Marshal(np)
	if err != nil {
		return nil, fmt.Errorf("marshalling nodepool %s: %w", np.Name, err)
	}
	out := &karpv1.NodePool{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("unmarshalling nodepool %s as karpenter.sh/v1: %w", np.Name, err)
	}
	out.StatusConditions().SetTrue(karpv1.ConditionTypeValidationSucceeded)
	out.StatusConditions().SetTrue(karpv1.ConditionTypeNodeClassReady)
	return out, nil
}

// daemonSetPods builds the pods upstream's provisioner derives from DaemonSets.
func daemonSetPods(dss []*appsv1.DaemonSet) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(dss))
	for _, ds := range dss {
		out = append(out, daemonset.PodForDaemonSet(ds))
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedLabelKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
