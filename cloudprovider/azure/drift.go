package azure

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	azv1beta1 "github.com/joist-dev/joist/api/azure/v1beta1"
	v1 "github.com/joist-dev/joist/api/v1"
	"github.com/joist-dev/joist/catalog"
	"github.com/joist-dev/joist/cloudprovider"
)

// Drift reasons, as the AKS provider names them.
const (
	DriftNodeClassHash     cloudprovider.DriftReason = "NodeClassHashChanged"
	DriftImageVersion      cloudprovider.DriftReason = "ImageVersionDrift"
	DriftKubernetesVersion cloudprovider.DriftReason = "KubernetesVersionDrift"
)

// IsDrifted reports a claim whose class's static hash changed (same hash version), whose image is
// not the one the class now resolves for its size, or whose node's kubelet runs another
// Kubernetes version than the class's.
func (p *CloudProvider) IsDrifted(ctx context.Context, claim *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	nc, err := p.nodeClass(ctx, claim)
	if err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if claim.Annotations[azv1beta1.AnnotationAKSNodeClassHashVersion] == azv1beta1.AKSNodeClassHashVersion &&
		claim.Annotations[azv1beta1.AnnotationAKSNodeClassHash] != "" && claim.Annotations[azv1beta1.AnnotationAKSNodeClassHash] != nc.Hash() {
		return DriftNodeClassHash, nil
	}
	if !nc.IsTrue(azv1beta1.ConditionTypeReady) {
		return "", nil // the class's images and version are not resolved: nothing to compare with
	}
	if claim.Status.ImageID != "" && len(nc.Status.Images) > 0 {
		it := &catalog.InstanceType{Labels: claim.Labels}
		if want := imageFor(nc, it); want != "" && want != claim.Status.ImageID {
			return DriftImageVersion, nil
		}
	}
	if nc.Status.KubernetesVersion != nil && claim.Status.NodeName != "" {
		node := &corev1.Node{}
		if err := p.kube.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, node); err != nil {
			return "", client.IgnoreNotFound(fmt.Errorf("getting node %s: %w", claim.Status.NodeName, err))
		}
		if v := node.Status.NodeInfo.KubeletVersion; v != "" && trimV(v) != trimV(*nc.Status.KubernetesVersion) {
			return DriftKubernetesVersion, nil
		}
	}
	return "", nil
}

func trimV(v string) string {
	if len(v) > 0 && v[0] == 'v' {
		return v[1:]
	}
	return v
}
