package aws

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// nodeConfig is nodeadm's NodeConfig (node.eks.aws/v1alpha1), the fields Joist writes. Tests
// decode the rendered YAML strictly into nodeadm's own API types.
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster  nodeConfigCluster   `json:"cluster"`
	Instance *nodeConfigInstance `json:"instance,omitempty"`
	Kubelet  nodeConfigKubelet   `json:"kubelet"`
}

type nodeConfigCluster struct {
	Name              string `json:"name"`
	APIServerEndpoint string `json:"apiServerEndpoint"`
	// CertificateAuthority is base64 (nodeadm's field is []byte).
	CertificateAuthority string `json:"certificateAuthority"`
	CIDR                 string `json:"cidr"`
}

type nodeConfigInstance struct {
	LocalStorage struct {
		Strategy string `json:"strategy"`
	} `json:"localStorage"`
}

type nodeConfigKubelet struct {
	// Config is merged by nodeadm over its KubeletConfiguration defaults.
	Config map[string]any `json:"config,omitempty"`
	Flags  []string       `json:"flags,omitempty"`
}

// al2023 is a MIME archive: the user's parts (a bare NodeConfig becomes a NodeConfig part, a
// script a shell part), then Joist's NodeConfig, which nodeadm merges over the user's NodeConfigs
// (later documents win), as Karpenter does.
func (b bootstrap) al2023() (string, error) {
	if err := b.requireCluster(true); err != nil {
		return "", err
	}
	parts, err := customParts(b.custom, true)
	if err != nil {
		return "", err
	}
	cfg, err := b.nodeConfig()
	if err != nil {
		return "", err
	}
	return writeMIME(append(parts, mimePart{contentType: mediaNodeConfig, content: cfg}))
}

func (b bootstrap) nodeConfig() (string, error) {
	kubelet, err := kubeletConfigFields(b.kubelet)
	if err != nil {
		return "", err
	}
	kubelet["registerWithTaints"] = b.taints
	nc := nodeConfig{
		APIVersion: "node.eks.aws/v1alpha1", Kind: "NodeConfig",
		Spec: nodeConfigSpec{
			Cluster: nodeConfigCluster{
				Name: b.clusterName, APIServerEndpoint: b.cluster.Endpoint, CertificateAuthority: b.cluster.CABundle, CIDR: b.cluster.ServiceCIDR,
			},
			Kubelet: nodeConfigKubelet{Config: kubelet, Flags: []string{"--node-labels=" + strings.Join(b.sortedLabels(), ",")}},
		},
	}
	if b.instanceStorePolicy == "RAID0" {
		nc.Spec.Instance = &nodeConfigInstance{}
		nc.Spec.Instance.LocalStorage.Strategy = "RAID0"
	}
	data, err := yaml.Marshal(nc)
	if err != nil {
		return "", fmt.Errorf("encoding NodeConfig: %w", err)
	}
	return "# Joist's NodeConfig\n" + string(data), nil
}
