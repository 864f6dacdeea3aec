package aws

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joist-dev/joist/api/aws/v1"
	v1 "github.com/joist-dev/joist/api/v1"
)

var testCluster = ClusterInfo{Endpoint: "https://ABC.gr7.us-west-2.eks.amazonaws.com", CABundle: base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n")),
	ServiceCIDR: "172.20.0.0/16", KubernetesVersion: "1.33"}

func testNodeClass(family string, userData *string, kubelet *awsv1.KubeletConfiguration) *awsv1.EC2NodeClass {
	alias := map[string]string{"AL2023": "al2023@latest", "AL2": "al2@latest", "Bottlerocket": "bottlerocket@latest"}[family]
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: alias}}, UserData: userData, Kubelet: kubelet, Role: "KarpenterNodeRole-prod",
	}}
	if alias == "" {
		nc.Spec.AMIFamily = &family
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-123"}}
	}
	return nc
}

// render is the decoded user data of a node of NodePool "default" with one taint.
func render(t *testing.T, nc *awsv1.EC2NodeClass, info ClusterInfo) (string, error) {
	t.Helper()
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-x", Labels: map[string]string{v1.NodePoolLabelKey: "default"}}}
	claim.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	b64, err := claimBootstrap("prod", info, nc, claim, "spot").userData(nc.AMIFamily())
	if err != nil {
		return "", err
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), nil
}

func mustRender(t *testing.T, nc *awsv1.EC2NodeClass) string {
	t.Helper()
	out, err := render(t, nc, testCluster)
	if err != nil {
		t.Fatalf("rendering %s: %v", nc.AMIFamily(), err)
	}
	return out
}

// allKubelet sets every kubelet field of the CRD (podsPerCore is left out for Bottlerocket, which
// CEL refuses it for).
func allKubelet(podsPerCore bool) *awsv1.KubeletConfiguration {
	k := &awsv1.KubeletConfiguration{
		ClusterDNS: []string{"172.20.0.53"}, MaxPods: ptr.To[int32](58),
		SystemReserved: map[string]string{"cpu": "100m", "memory": "100Mi"}, KubeReserved: map[string]string{"cpu": "200m", "ephemeral-storage": "1Gi"},
		EvictionHard:              map[string]string{"memory.available": "5%"},
		EvictionSoft:              map[string]string{"memory.available": "10%", "nodefs.available": "15%"},
		EvictionSoftGracePeriod:   map[string]metav1.Duration{"memory.available": {Duration: time.Minute}, "nodefs.available": {Duration: 90 * time.Second}},
		EvictionMaxPodGracePeriod: ptr.To[int32](60), ImageGCHighThresholdPercent: ptr.To[int32](85), ImageGCLowThresholdPercent: ptr.To[int32](80),
		CPUCFSQuota: ptr.To(false),
	}
	if podsPerCore {
		k.PodsPerCore = ptr.To[int32](20)
	}
	return k
}

func TestAL2023KubeletFieldsReachTheKubelet(t *testing.T) {
	n := checkAL2023(t, mustRender(t, testNodeClass("AL2023", nil, allKubelet(true))))
	kc := n.kubelet
	if kc.MaxPods != 58 || kc.PodsPerCore != 20 || kc.EvictionMaxPodGracePeriod != 60 || *kc.ImageGCHighThresholdPercent != 85 ||
		*kc.ImageGCLowThresholdPercent != 80 || *kc.CPUCFSQuota != false || kc.ClusterDNS[0] != "172.20.0.53" ||
		kc.SystemReserved["memory"] != "100Mi" || kc.KubeReserved["ephemeral-storage"] != "1Gi" || kc.EvictionHard["memory.available"] != "5%" ||
		kc.EvictionSoft["nodefs.available"] != "15%" || kc.EvictionSoftGracePeriod["nodefs.available"] != "1m30s" {
		t.Errorf("kubelet configuration nodeadm writes = %+v, want every EC2NodeClass kubelet field", kc)
	}
	if len(kc.RegisterWithTaints) != 2 || kc.RegisterWithTaints[0].Key != v1.UnregisteredNoExecuteTaint.Key || kc.RegisterWithTaints[1].Key != "dedicated" {
		t.Errorf("registerWithTaints = %+v, want the unregistered taint and the pool's", kc.RegisterWithTaints)
	}
	if n.cluster.CIDR != "172.20.0.0/16" || n.cluster.Name != "prod" || string(n.cluster.CertificateAuthority) != "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n" {
		t.Errorf("cluster = %+v", n.cluster)
	}
	if len(n.flags) != 1 || n.flags[0] != "--node-labels=karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default" {
		t.Errorf("flags = %q", n.flags)
	}
}

func TestAL2023NeedsTheServiceCIDR(t *testing.T) {
	info := testCluster
	info.ServiceCIDR = ""
	_, err := render(t, testNodeClass("AL2023", nil, nil), info)
	if err == nil || !strings.Contains(err.Error(), "service CIDR ($CLUSTER_CIDR)") || !strings.Contains(err.Error(), "eks:DescribeCluster") {
		t.Errorf("render without a CIDR = %v, want an error naming the CIDR, its variable and eks:DescribeCluster", err)
	}
	// With the CIDR (from discovery), the NodeConfig carries it: nodeadm's validation passes.
	if n := checkAL2023(t, mustRender(t, testNodeClass("AL2023", nil, nil))); n.kubelet.ClusterDNS[0] != "172.20.0.10" {
		t.Errorf("clusterDNS derived from the CIDR = %v, want 172.20.0.10", n.kubelet.ClusterDNS)
	}
}

func TestAL2023CustomUserDataMerged(t *testing.T) {
	bare := "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n"
	for _, tc := range []struct {
		name, userData string
		configs        int
		scripts        []string
	}{
		{"bare NodeConfig", bare, 2, nil},
		{"shell script", "#!/bin/bash\necho hello\n", 1, []string{"#!/bin/bash\necho hello\n"}},
		{"full MIME document", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: application/node.eks.aws\n\n" + bare +
			"\n--B\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\necho one\n--B--\n", 2, []string{"echo one"}},
		{"Content-Type first", "Content-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: text/x-shellscript\n\necho two\n--B--\n", 1, []string{"echo two"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := checkAL2023(t, mustRender(t, testNodeClass("AL2023", ptr.To(tc.userData), nil)))
			if len(n.configs) != tc.configs {
				t.Errorf("NodeConfig parts = %d, want %d", len(n.configs), tc.configs)
			}
			if strings.Join(n.scripts, "|") != strings.Join(tc.scripts, "|") {
				t.Errorf("scripts = %q, want %q", n.scripts, tc.scripts)
			}
			if tc.configs == 2 && n.kubelet.ShutdownGracePeriod.Duration != 30*time.Second {
				t.Errorf("the user's kubelet setting was lost: shutdownGracePeriod = %v", n.kubelet.ShutdownGracePeriod)
			}
		})
	}
}

func TestAL2UserData(t *testing.T) {
	mimeDoc := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"EXAMPLEBOUNDARY\"\n\n--EXAMPLEBOUNDARY\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\necho \"Running a custom user data script\"\n\n--EXAMPLEBOUNDARY--\n"
	for _, tc := range []struct{ name, userData, firstScript string }{
		{"MIME userData is not prefixed with a shebang", mimeDoc, "echo \"Running a custom user data script\"\n"},
		{"a script becomes a part", "#!/bin/bash\necho hi\n", "#!/bin/bash\necho hi\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := checkAL2(t, mustRender(t, testNodeClass("AL2", ptr.To(tc.userData), nil)))
			if len(n.scripts) != 2 || n.scripts[0] != tc.firstScript {
				t.Errorf("scripts = %q, want the user's first, then bootstrap", n.scripts)
			}
		})
	}
	t.Run("every kubelet field reaches the kubelet", func(t *testing.T) {
		n := checkAL2(t, mustRender(t, testNodeClass("AL2", nil, allKubelet(true))))
		args := bootstrapArgs(t, n.bootstrap)
		if args["cluster"] != "prod" || args["--apiserver-endpoint"] != testCluster.Endpoint || args["--b64-cluster-ca"] != testCluster.CABundle ||
			args["--dns-cluster-ip"] != "172.20.0.53" || args["--use-max-pods"] != "false" {
			t.Errorf("bootstrap.sh arguments = %q", args)
		}
		want := map[string]string{
			"--node-labels":          "karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default",
			"--register-with-taints": "karpenter.sh/unregistered:NoExecute,dedicated=gpu:NoSchedule",
			"--max-pods":             "58", "--pods-per-core": "20", "--system-reserved": "cpu=100m,memory=100Mi", "--kube-reserved": "cpu=200m,ephemeral-storage=1Gi",
			"--eviction-hard": "memory.available<5%", "--eviction-soft": "memory.available<10%,nodefs.available<15%",
			"--eviction-soft-grace-period": "memory.available=1m0s,nodefs.available=1m30s", "--eviction-max-pod-grace-period": "60",
			"--image-gc-high-threshold": "85", "--image-gc-low-threshold": "80", "--cpu-cfs-quota": "false",
		}
		for k, v := range want {
			if n.kubelet[k] != v {
				t.Errorf("kubelet flag %s = %q, want %q", k, n.kubelet[k], v)
			}
		}
		if len(n.kubelet) != len(want) {
			t.Errorf("kubelet flags = %q, want exactly %v", n.kubelet, want)
		}
	})
	t.Run("IPv6 cluster", func(t *testing.T) {
		info := testCluster
		info.ServiceCIDR = "fd12:3456:789a::/108"
		out, err := render(t, testNodeClass("AL2", nil, nil), info)
		if err != nil {
			t.Fatal(err)
		}
		args := bootstrapArgs(t, checkAL2(t, out).bootstrap)
		if args["--ip-family"] != "ipv6" || args["--service-ipv6-cidr"] != info.ServiceCIDR || args["--dns-cluster-ip"] != "fd12:3456:789a::a" {
			t.Errorf("IPv6 bootstrap arguments = %q", args)
		}
	})
}

func TestBottlerocketUserData(t *testing.T) {
	t.Run("the user's settings.kubernetes table is merged, Joist's owned settings win", func(t *testing.T) {
		custom := "[settings.kubernetes]\nkube-api-qps = 30\ncluster-name = \"someone-else\"\n[settings.kubernetes.node-labels]\nteam = \"ml\"\n"
		s := checkBottlerocket(t, mustRender(t, testNodeClass("Bottlerocket", ptr.To(custom), nil)))
		k := s.Settings.Kubernetes
		if k.KubeAPIQPS == nil || *k.KubeAPIQPS != 30 || k.ClusterName != "prod" || k.NodeLabels["team"] != "ml" || k.NodeLabels[v1.NodePoolLabelKey] != "default" {
			t.Errorf("settings.kubernetes = %+v", k)
		}
		if got := k.NodeTaints["dedicated"]; len(got) != 1 || got[0] != "gpu:NoSchedule" {
			t.Errorf("node-taints = %v", k.NodeTaints)
		}
	})
	t.Run("every kubelet field Bottlerocket has reaches it", func(t *testing.T) {
		k := checkBottlerocket(t, mustRender(t, testNodeClass("Bottlerocket", nil, allKubelet(false)))).Settings.Kubernetes
		if k.ClusterDNSIP != "172.20.0.53" || *k.MaxPods != 58 || k.SystemReserved["memory"] != "100Mi" || k.KubeReserved["cpu"] != "200m" ||
			k.EvictionHard["memory.available"] != "5%" || k.EvictionSoft["nodefs.available"] != "15%" || k.EvictionSoftGracePeriod["memory.available"] != "1m0s" ||
			*k.EvictionMaxPodGracePeriod != 60 || *k.ImageGCHigh != "85" || *k.ImageGCLow != "80" || *k.CPUCFSQuota != false {
			t.Errorf("settings.kubernetes = %+v", k)
		}
	})
	t.Run("TOML that does not parse is refused", func(t *testing.T) {
		_, err := render(t, testNodeClass("Bottlerocket", ptr.To("[settings.kubernetes\n"), nil), testCluster)
		if err == nil || !strings.Contains(err.Error(), "not valid Bottlerocket TOML") {
			t.Errorf("render = %v", err)
		}
	})
}

// TestKarpenterExamples renders a node of every EC2NodeClass of Karpenter's examples/v1 (copied in
// api/aws/v1/testdata) with Render, as `joist aws render` does, and runs the node agents' checks.
func TestKarpenterExamples(t *testing.T) {
	files, err := filepath.Glob("../../api/aws/v1/testdata/karpenter-examples/*.yaml")
	if err != nil || len(files) < 20 {
		t.Fatalf("examples: %v %v", files, err)
	}
	seen := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		var classes []*awsv1.EC2NodeClass
		for _, doc := range strings.Split(string(data), "\n---") {
			var meta metav1.TypeMeta
			_ = yaml.Unmarshal([]byte(doc), &meta)
			switch meta.Kind {
			case "EC2NodeClass":
				nc := &awsv1.EC2NodeClass{}
				if err := yaml.UnmarshalStrict([]byte(doc), nc); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				classes = append(classes, nc)
			case "NodePool":
				if err := yaml.Unmarshal([]byte(doc), pool); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
			}
		}
		for _, nc := range classes {
			seen++
			name := filepath.Base(f) + "/" + nc.Name
			out, err := Render(RenderInput{ClusterName: "prod", Cluster: testCluster, NodeClass: nc, NodePool: pool, InstanceType: "m5.large"})
			family := nc.AMIFamily()
			if strings.HasPrefix(family, "Windows") {
				if err == nil || !strings.Contains(err.Error(), "not supported by Joist yet") {
					t.Errorf("%s: render = %v, want Windows refused with a message", name, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			checkUserData(t, family, out.UserData)
			if aws := decodeLT(t, out); aws != out.UserData {
				t.Errorf("%s: the launch template's user data is not the rendered one", name)
			}
			if nc.Spec.UserData != nil && family == awsv1.AMIFamilyCustom && out.UserData != *nc.Spec.UserData {
				t.Errorf("%s: Custom user data changed", name)
			}
			if family == awsv1.AMIFamilyAL2023 && nc.Spec.UserData != nil {
				n := checkAL2023(t, out.UserData)
				if len(n.scripts) == 0 {
					t.Errorf("%s: the user's script part was lost", name)
				}
				if strings.Contains(*nc.Spec.UserData, "strategy: Mount") && n.configs[0].Spec.Instance.LocalStorage.Strategy != "Mount" {
					t.Errorf("%s: the user's NodeConfig was lost", name)
				}
			}
			if nc.Spec.InstanceStorePolicy != nil && family == awsv1.AMIFamilyAL2023 {
				if n := checkAL2023(t, out.UserData); n.configs[len(n.configs)-1].Spec.Instance.LocalStorage.Strategy != "RAID0" {
					t.Errorf("%s: instanceStorePolicy RAID0 not given to nodeadm", name)
				}
			}
			if family == awsv1.AMIFamilyBottlerocket && nc.Spec.UserData != nil {
				if k := checkBottlerocket(t, out.UserData).Settings.Kubernetes; k.KubeAPIQPS == nil || *k.KubeAPIQPS != 30 {
					t.Errorf("%s: the user's kube-api-qps was lost", name)
				}
			}
		}
	}
	if seen < 20 {
		t.Errorf("rendered %d EC2NodeClasses, want every one of the examples (≥ 20)", seen)
	}
}

func decodeLT(t *testing.T, r *Rendered) string {
	t.Helper()
	data, err := base64.StdEncoding.DecodeString(*r.LaunchTemplate.LaunchTemplateData.UserData)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
