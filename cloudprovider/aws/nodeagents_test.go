package aws

// The node agents' own parsers, used on rendered user data: MIME through the standard library (as
// cloud-init's and nodeadm's readers do), nodeadm's NodeConfig API types decoded strictly, the
// kubelet's KubeletConfiguration (kubelet.config.k8s.io/v1beta1) decoded strictly, bash through a
// bash parser (mvdan.cc/sh), Bottlerocket TOML through a TOML library with unknown keys refused.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
	"testing"

	admv1alpha1 "github.com/awslabs/amazon-eks-ami/nodeadm/api/v1alpha1"
	"github.com/pelletier/go-toml/v2"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"
)

type part struct{ mediaType, body string }

// readMIME parses a multi-part document as nodeadm's user-data provider and cloud-init do.
func readMIME(t *testing.T, data string) []part {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(data))
	if err != nil {
		t.Fatalf("user data is not a MIME document: %v\n%s", err, data)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		t.Fatalf("user data's Content-Type %q is not multipart (%v)", msg.Header.Get("Content-Type"), err)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var out []part
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("MIME part %d: %v\n%s", len(out)+1, err, data)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			t.Fatal(err)
		}
		pmt, _, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if err != nil {
			t.Fatalf("MIME part %d Content-Type: %v", len(out)+1, err)
		}
		out = append(out, part{pmt, string(body)})
	}
}

// al2023Node is what nodeadm would run with: the NodeConfigs of the user data merged in order
// (later documents win) and the kubelet configuration nodeadm writes.
type al2023Node struct {
	configs []admv1alpha1.NodeConfig
	cluster admv1alpha1.ClusterDetails
	flags   []string
	kubelet kubeletv1beta1.KubeletConfiguration
	scripts []string
}

// checkAL2023 decodes every NodeConfig part strictly into nodeadm's API types, applies nodeadm's
// config validation (internal/api/validation.go: name, apiServerEndpoint, certificateAuthority and
// cidr are required) to the merged config, and decodes the kubelet configuration nodeadm would
// write (its defaults, clusterDNS from the cidr, then spec.kubelet.config merged over them) strictly
// into the kubelet's own KubeletConfiguration type.
func checkAL2023(t *testing.T, data string) al2023Node {
	t.Helper()
	var n al2023Node
	kubeletDoc := map[string]any{}
	for _, p := range readMIME(t, data) {
		switch p.mediaType {
		case "application/node.eks.aws":
			var nc admv1alpha1.NodeConfig
			if err := yaml.UnmarshalStrict([]byte(p.body), &nc); err != nil {
				t.Fatalf("NodeConfig does not decode strictly into nodeadm's types: %v\n%s", err, p.body)
			}
			if nc.APIVersion != "node.eks.aws/v1alpha1" || nc.Kind != "NodeConfig" {
				t.Fatalf("NodeConfig part is %s %s", nc.APIVersion, nc.Kind)
			}
			n.configs = append(n.configs, nc)
			c := nc.Spec.Cluster
			for _, f := range []struct {
				dst *string
				src string
			}{{&n.cluster.Name, c.Name}, {&n.cluster.APIServerEndpoint, c.APIServerEndpoint}, {&n.cluster.CIDR, c.CIDR}} {
				if f.src != "" {
					*f.dst = f.src
				}
			}
			if c.CertificateAuthority != nil {
				n.cluster.CertificateAuthority = c.CertificateAuthority
			}
			n.flags = append(n.flags, nc.Spec.Kubelet.Flags...)
			for k, v := range nc.Spec.Kubelet.Config {
				var val any
				if err := json.Unmarshal(v.Raw, &val); err != nil {
					t.Fatalf("kubelet.config.%s: %v", k, err)
				}
				kubeletDoc[k] = val
			}
		case "text/x-shellscript":
			n.scripts = append(n.scripts, p.body)
		default:
			t.Fatalf("unexpected MIME part %s", p.mediaType)
		}
	}
	if len(n.configs) == 0 {
		t.Fatal("no NodeConfig part: nodeadm fails with \"Could not find NodeConfig within UserData\"")
	}
	switch {
	case n.cluster.Name == "":
		t.Fatal("nodeadm: Name is missing in cluster configuration")
	case n.cluster.APIServerEndpoint == "":
		t.Fatal("nodeadm: Apiserver endpoint is missing in cluster configuration")
	case n.cluster.CertificateAuthority == nil:
		t.Fatal("nodeadm: Certificate authority is missing in cluster configuration")
	case n.cluster.CIDR == "":
		t.Fatal("nodeadm: CIDR is missing in cluster configuration")
	}
	doc := map[string]any{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
		"clusterDNS": []string{ClusterInfo{ServiceCIDR: n.cluster.CIDR}.DNSAddress()}}
	for k, v := range kubeletDoc {
		doc[k] = v
	}
	n.kubelet = decodeKubelet(t, doc)
	return n
}

func decodeKubelet(t *testing.T, doc map[string]any) kubeletv1beta1.KubeletConfiguration {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var kc kubeletv1beta1.KubeletConfiguration
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kc); err != nil {
		t.Fatalf("kubelet configuration does not decode strictly into KubeletConfiguration: %v\n%s", err, raw)
	}
	if err := kubeletRefuses(kc); err != nil {
		t.Fatalf("the kubelet would refuse its configuration: %v\n%s", err, raw)
	}
	return kc
}

// al2Node is what cloud-init runs on AL2: the scripts of the MIME archive and bootstrap.sh's
// arguments as bash expands them.
type al2Node struct {
	scripts   []string
	bootstrap []string // bootstrap.sh's arguments
	kubelet   map[string]string
}

func checkAL2(t *testing.T, data string) al2Node {
	t.Helper()
	if !strings.HasPrefix(data, "MIME-Version:") {
		t.Fatalf("AL2 user data is not a MIME document from its first byte (cloud-init would run it as something else):\n%s", data)
	}
	var n al2Node
	for _, p := range readMIME(t, data) {
		if p.mediaType == "text/x-shellscript" {
			n.scripts = append(n.scripts, p.body)
		}
	}
	if len(n.scripts) == 0 {
		t.Fatal("no shell script part")
	}
	last := n.scripts[len(n.scripts)-1]
	f, err := syntax.NewParser().Parse(strings.NewReader(last), "bootstrap")
	if err != nil {
		t.Fatalf("bash cannot parse the bootstrap script: %v\n%s", err, last)
	}
	syntax.Walk(f, func(node syntax.Node) bool {
		call, ok := node.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		words := make([]string, len(call.Args))
		for i, w := range call.Args {
			s, err := expand.Literal(nil, w)
			if err != nil {
				t.Fatalf("expanding %v: %v", w, err)
			}
			words[i] = s
		}
		if words[0] == "/etc/eks/bootstrap.sh" {
			n.bootstrap = words[1:]
		}
		return true
	})
	if len(n.bootstrap) == 0 {
		t.Fatalf("the last script does not call /etc/eks/bootstrap.sh:\n%s", last)
	}
	n.kubelet = map[string]string{}
	args := bootstrapArgs(t, n.bootstrap)
	for _, flag := range strings.Fields(args["--kubelet-extra-args"]) {
		name, value, ok := strings.Cut(flag, "=")
		if !ok || !strings.HasPrefix(name, "--") {
			t.Fatalf("kubelet flag %q is not --name=value", flag)
		}
		n.kubelet[name] = value
	}
	return n
}

// bootstrapArgs reads bootstrap.sh's options (cluster name first, then --option value pairs, as
// its getopt loop does).
func bootstrapArgs(t *testing.T, words []string) map[string]string {
	t.Helper()
	out := map[string]string{"cluster": words[0]}
	valued := map[string]bool{"--apiserver-endpoint": true, "--b64-cluster-ca": true, "--dns-cluster-ip": true, "--kubelet-extra-args": true,
		"--use-max-pods": true, "--ip-family": true, "--service-ipv6-cidr": true, "--local-disks": true}
	for i := 1; i < len(words); i++ {
		if !valued[words[i]] || i+1 == len(words) {
			t.Fatalf("bootstrap.sh does not take %q", words[i])
		}
		out[words[i]] = words[i+1]
		i++
	}
	return out
}

// brSettings is Bottlerocket's settings model, the keys Joist writes or the examples use
// (bottlerocket-os/bottlerocket settings.kubernetes.*, settings.bootstrap-commands.*); decoding
// refuses any other key and any duplicate table.
type brSettings struct {
	Settings struct {
		Kubernetes struct {
			APIServer                 string              `toml:"api-server"`
			ClusterName               string              `toml:"cluster-name"`
			ClusterCertificate        string              `toml:"cluster-certificate"`
			ClusterDNSIP              any                 `toml:"cluster-dns-ip"`
			NodeLabels                map[string]string   `toml:"node-labels"`
			NodeTaints                map[string][]string `toml:"node-taints"`
			MaxPods                   *int                `toml:"max-pods"`
			SystemReserved            map[string]string   `toml:"system-reserved"`
			KubeReserved              map[string]string   `toml:"kube-reserved"`
			EvictionHard              map[string]string   `toml:"eviction-hard"`
			EvictionSoft              map[string]string   `toml:"eviction-soft"`
			EvictionSoftGracePeriod   map[string]string   `toml:"eviction-soft-grace-period"`
			EvictionMaxPodGracePeriod *int                `toml:"eviction-max-pod-grace-period"`
			ImageGCHigh               *string             `toml:"image-gc-high-threshold-percent"`
			ImageGCLow                *string             `toml:"image-gc-low-threshold-percent"`
			CPUCFSQuota               *bool               `toml:"cpu-cfs-quota-enforced"`
			KubeAPIQPS                *int                `toml:"kube-api-qps"`
		} `toml:"kubernetes"`
		BootstrapCommands map[string]struct {
			Commands  [][]string `toml:"commands"`
			Mode      string     `toml:"mode"`
			Essential bool       `toml:"essential"`
		} `toml:"bootstrap-commands"`
	} `toml:"settings"`
}

func checkBottlerocket(t *testing.T, data string) brSettings {
	t.Helper()
	var s brSettings
	dec := toml.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("Bottlerocket would refuse its user data: %v\n%s", err, data)
	}
	k := s.Settings.Kubernetes
	if k.APIServer == "" || k.ClusterName == "" || k.ClusterCertificate == "" {
		t.Fatalf("settings.kubernetes lacks api-server, cluster-name or cluster-certificate:\n%s", data)
	}
	for signal := range k.EvictionSoft {
		if _, ok := k.EvictionSoftGracePeriod[signal]; !ok {
			t.Fatalf("eviction-soft %s has no eviction-soft-grace-period", signal)
		}
	}
	return s
}

// checkUserData runs the family's checks on base64 or decoded user data.
func checkUserData(t *testing.T, family, data string) {
	t.Helper()
	switch family {
	case "AL2023":
		checkAL2023(t, data)
	case "AL2":
		checkAL2(t, data)
	case "Bottlerocket":
		checkBottlerocket(t, data)
	case "Custom":
	default:
		t.Fatal(fmt.Sprintf("no checks for family %s", family))
	}
}
